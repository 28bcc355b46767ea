package bundle

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// A plugin resource's next pass for its poll: the plan's PollAfter, else the
// plugin's default, never sooner than minPluginPoll (a tiny poll ran a pass, a
// Plan and its backend calls about every millisecond); none without either.
func TestPollAfter(t *testing.T) {
	if minPluginPoll != time.Second {
		t.Errorf("minPluginPoll = %v, want 1s", minPluginPoll)
	}
	for _, tc := range []struct {
		name   string
		def    time.Duration
		result *plugin.Result
		want   time.Duration
	}{
		{"the plan's poll", time.Minute, &plugin.Result{PollAfter: 5 * time.Minute}, 5 * time.Minute},
		{"the default", time.Minute, &plugin.Result{}, time.Minute},
		{"the default, no result (a failed plan)", time.Minute, nil, time.Minute},
		{"a negative poll is the default", time.Minute, &plugin.Result{PollAfter: -time.Hour}, time.Minute},
		{"none: events only", 0, &plugin.Result{}, 0},
		{"a 1ns poll", time.Minute, &plugin.Result{PollAfter: time.Nanosecond}, time.Second},
		{"a poll just short of the floor", 0, &plugin.Result{PollAfter: time.Second - 1}, time.Second},
		{"the floor", 0, &plugin.Result{PollAfter: time.Second}, time.Second},
		{"a 1ms default", time.Millisecond, nil, time.Second},
		{"the longest poll", 0, &plugin.Result{PollAfter: 1<<63 - 1}, 1<<63 - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pollAfter(plugin.Description{DefaultPollInterval: tc.def}, tc.result); got != tc.want {
				t.Errorf("pollAfter = %v, want %v", got, tc.want)
			}
		})
	}
}

// A plugin resource's orphans become Tombstones up to MaxTombstonesPerResource:
// a system that names new orphans on every poll cannot fill etcd and the
// controller's memory. Orphans with a Tombstone are not made again, and other
// resources' Tombstones do not count.
func TestNewOrphanItems(t *testing.T) {
	item := func(id string) plugin.ExternalItem {
		return plugin.ExternalItem{ExternalItem: limbov1alpha1.ExternalItem{Kind: "Thing", ID: id}}
	}
	existingOf := func(resource string, n int) map[string]*limbov1alpha1.Tombstone {
		out := map[string]*limbov1alpha1.Tombstone{}
		for i := range n {
			ts := &limbov1alpha1.Tombstone{Spec: limbov1alpha1.TombstoneSpec{Resource: resource, Item: item(fmt.Sprintf("old-%d", i)).ExternalItem}}
			out[softdelete.TombstoneKey(resource, ts.Spec.Item)] = ts
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		existing map[string]*limbov1alpha1.Tombstone
		orphans  []plugin.ExternalItem
		wantIDs  []string
		wantHeld int
	}{
		{"room for all", existingOf("gc", 1), []plugin.ExternalItem{item("old-0"), item("a"), item("b")}, []string{"a", "b"}, 0},
		{"one place left", existingOf("gc", MaxTombstonesPerResource-1), []plugin.ExternalItem{item("a"), item("b"), item("c")}, []string{"a"}, 2},
		{"full: those with a Tombstone are not held", existingOf("gc", MaxTombstonesPerResource), []plugin.ExternalItem{item("old-1"), item("a")}, nil, 1},
		{"another resource's Tombstones do not count", existingOf("other", MaxTombstonesPerResource), []plugin.ExternalItem{item("a")}, []string{"a"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			items, held := newOrphanItems("gc", tc.orphans, tc.existing)
			var ids []string
			for _, it := range items {
				ids = append(ids, it.ID)
			}
			if !reflect.DeepEqual(ids, tc.wantIDs) || held != tc.wantHeld {
				t.Errorf("newOrphanItems = %v, held %d; want %v, held %d", ids, held, tc.wantIDs, tc.wantHeld)
			}
		})
	}
}

// A pass asks the API server for the Bundle's Tombstones only when the previous
// pendingDeletions lists one of its namespace that the cache does not hold (one
// made before the Bundle moved to this shard); objects' entries, and another
// cluster's, do not count.
func TestTombstonesUnseen(t *testing.T) {
	tsEntry := func(name string) limbov1alpha1.PendingDeletion {
		return limbov1alpha1.PendingDeletion{APIVersion: limbov1alpha1.GroupVersion.String(), Kind: "Tombstone", Namespace: "ns", Name: name}
	}
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}}
	b.Status.PendingDeletions = []limbov1alpha1.PendingDeletion{
		tsEntry("web-items-1"),
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "old"},
		{APIVersion: limbov1alpha1.GroupVersion.String(), Kind: "Tombstone", Namespace: "ns", Name: "remote", Cluster: "workload"},
	}
	if tombstonesUnseen(b, map[string]bool{"web-items-1": true}) {
		t.Errorf("the cache holds every Tombstone the status lists, but the pass would ask")
	}
	if !tombstonesUnseen(b, map[string]bool{}) {
		t.Errorf("the status lists Tombstone web-items-1 and the cache lacks it, but the pass would not ask")
	}
	if tombstonesUnseen(&limbov1alpha1.Bundle{}, map[string]bool{}) {
		t.Errorf("a Bundle without a status: the pass would ask")
	}
}
