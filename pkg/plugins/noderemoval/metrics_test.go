package noderemoval

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
)

// limbo_node_removal_undrained_nodes{namespace,bundle,resource} is the number of
// undrained Nodes of the resource's last run; each Node is reported in an event
// once.
func TestReportUndrained(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	p := New(Options{Metrics: m})
	req := reportRequest("team", "shop", "u1", "nodes")
	gauge := m.UndrainedNodes.WithLabelValues("team", "shop", "nodes")
	for _, step := range []struct {
		undrained  []string
		wantEvents int
	}{
		{undrained: []string{"n1", "n2"}, wantEvents: 2},
		{undrained: []string{"n1", "n2", "n3"}, wantEvents: 1},
		{undrained: nil, wantEvents: 0},
	} {
		events := p.reportUndrained(req, step.undrained, DefaultDrainTaint)
		if len(events) != step.wantEvents {
			t.Errorf("undrained %v: %d events, want %d", step.undrained, len(events), step.wantEvents)
		}
		if got := testutil.ToFloat64(gauge); got != float64(len(step.undrained)) {
			t.Errorf("undrained %v: gauge = %v, want %d", step.undrained, got, len(step.undrained))
		}
	}
}

// A Bundle gone takes its series with it: an alert on the gauge must not keep
// firing for it. Other Bundles' series stay.
func TestForgetBundleDropsItsUndrainedSeries(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	p := New(Options{Metrics: m})
	shop := reportRequest("team", "shop", "u1", "nodes")
	other := reportRequest("team", "other", "u2", "nodes")
	p.reportUndrained(shop, []string{"n1"}, DefaultDrainTaint)
	p.reportUndrained(other, []string{"n2"}, DefaultDrainTaint)
	p.ForgetBundle("u1")
	if n := testutil.CollectAndCount(m.UndrainedNodes); n != 1 {
		t.Errorf("%d series after the Bundle was forgotten, want the other Bundle's only", n)
	}
	if got := testutil.ToFloat64(m.UndrainedNodes.WithLabelValues("team", "other", "nodes")); got != 1 {
		t.Errorf("the other Bundle's series = %v, want 1", got)
	}
	// The Bundle re-created under its name reports its Nodes again.
	if events := p.reportUndrained(shop, []string{"n1"}, DefaultDrainTaint); len(events) != 1 {
		t.Errorf("%d events for the forgotten Bundle's Node, want 1", len(events))
	}
}

// The event tells the operator the taint this resource mirrors: its own
// drainTaint, not the default.
func TestReportUndrainedNamesTheResourceTaint(t *testing.T) {
	p := New(Options{Metrics: NewMetrics(prometheus.NewRegistry())})
	req := reportRequest("team", "shop", "u1", "nodes")
	events := p.reportUndrained(req, []string{"n1"}, Taint{Key: "example.com/retire", Value: "yes", Effect: "NoExecute"})
	if len(events) != 1 {
		t.Fatalf("%d events, want 1", len(events))
	}
	if msg := events[0].Message; !strings.Contains(msg, "taint it example.com/retire=yes:NoExecute and") {
		t.Errorf("event %q does not name the resource's drain taint", msg)
	}
	events = p.reportUndrained(req, []string{"n1", "n2"}, Taint{Key: "example.com/retire", Effect: "NoSchedule"})
	if len(events) != 1 || !strings.Contains(events[0].Message, "taint it example.com/retire:NoSchedule and") {
		t.Errorf("events %v: want one naming the taint without a value as kubectl taint takes it", events)
	}
}

// A resource that left the spec takes its series with it; the Bundle's other
// resource keeps its own.
func TestForgetResourceDropsItsUndrainedSeries(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	p := New(Options{Metrics: m})
	p.reportUndrained(reportRequest("team", "shop", "u1", "rack-a"), []string{"n1"}, DefaultDrainTaint)
	p.reportUndrained(reportRequest("team", "shop", "u1", "rack-b"), []string{"n2", "n3"}, DefaultDrainTaint)
	p.ForgetResource("u1", "rack-a")
	if n := testutil.CollectAndCount(m.UndrainedNodes); n != 1 {
		t.Errorf("%d series after rack-a was forgotten, want rack-b's only", n)
	}
	if got := testutil.ToFloat64(m.UndrainedNodes.WithLabelValues("team", "shop", "rack-b")); got != 2 {
		t.Errorf("rack-b's series = %v, want 2", got)
	}
}

// A Bundle deleted and made again under its name shares its series: the old
// one forgotten after the new one reported leaves the new one's series.
func TestForgetBundleLeavesTheSeriesOfABundleMadeAgain(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	p := New(Options{Metrics: m})
	old := reportRequest("team", "shop", "u1", "nodes")
	again := reportRequest("team", "shop", "u2", "nodes")
	p.reportUndrained(old, []string{"n1"}, DefaultDrainTaint)
	p.reportUndrained(again, []string{"n1", "n2"}, DefaultDrainTaint)
	p.ForgetBundle("u1")
	if n := testutil.CollectAndCount(m.UndrainedNodes); n != 1 {
		t.Fatalf("%d series after the old Bundle was forgotten, want the new one's", n)
	}
	if got := testutil.ToFloat64(m.UndrainedNodes.WithLabelValues("team", "shop", "nodes")); got != 2 {
		t.Errorf("the series = %v, want the new Bundle's 2", got)
	}
	p.ForgetBundle("u2")
	if n := testutil.CollectAndCount(m.UndrainedNodes); n != 0 {
		t.Errorf("%d series after both were forgotten, want none", n)
	}
}

// reportRequest is a request of resource of the Bundle namespace/name with uid.
func reportRequest(namespace, name string, uid types.UID, resource string) plugin.Request {
	return plugin.Request{Bundle: &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: uid}}, Resource: resource}
}
