package statusmetrics

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

func TestCollect(t *testing.T) {
	// copied lists the kinds a scrape listed with deep copies: a scrape reads
	// every cached Bundle and Tombstone and must not copy them.
	var copied []string
	scheme := runtime.NewScheme()
	if err := limbov1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	next := metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "shop"},
			Status: limbov1alpha1.BundleStatus{PendingDeletionCount: 2, NextDeletion: &next}},
		&limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "idle"}},
		&limbov1alpha1.Tombstone{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "gc-4f7c", Labels: map[string]string{limbov1alpha1.LabelBundle: "shop"}},
			Spec:       limbov1alpha1.TombstoneSpec{Plugin: "namespace-gc", Item: limbov1alpha1.ExternalItem{Kind: "StorageOSNamespace", ID: "4f7c"}},
			Status:     limbov1alpha1.TombstoneStatus{Attempts: 3, DeleteAfter: &next},
		},
	).WithInterceptorFuncs(interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		var o client.ListOptions
		o.ApplyOptions(opts)
		if o.UnsafeDisableDeepCopy == nil || !*o.UnsafeDisableDeepCopy {
			copied = append(copied, fmt.Sprintf("%T", list))
		}
		return c.List(ctx, list, opts...)
	}}).Build()

	collector := New()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(collector)
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 0 {
		t.Errorf("without a reader: %d metrics, %v; want none", n, err)
	}

	collector.SetReader(c)
	want := `
# HELP limbo_bundle_next_deletion_timestamp_seconds When a Bundle's soonest pending deletion is due, as a Unix time (status.nextDeletion).
# TYPE limbo_bundle_next_deletion_timestamp_seconds gauge
limbo_bundle_next_deletion_timestamp_seconds{bundle="shop",namespace="team-a"} 1.7723664e+09
# HELP limbo_bundle_pending_deletions Objects and external items a Bundle has in limbo (status.pendingDeletionCount).
# TYPE limbo_bundle_pending_deletions gauge
limbo_bundle_pending_deletions{bundle="idle",namespace="team-b"} 0
limbo_bundle_pending_deletions{bundle="shop",namespace="team-a"} 2
# HELP limbo_tombstone_attempts External deletes started for a Tombstone (status.attempts).
# TYPE limbo_tombstone_attempts gauge
limbo_tombstone_attempts{bundle="shop",kind="StorageOSNamespace",namespace="team-a",plugin="namespace-gc",tombstone="gc-4f7c"} 3
# HELP limbo_tombstone_delete_after_timestamp_seconds The deadline of a Tombstone's countdown, as a Unix time (status.deleteAfter).
# TYPE limbo_tombstone_delete_after_timestamp_seconds gauge
limbo_tombstone_delete_after_timestamp_seconds{bundle="shop",kind="StorageOSNamespace",namespace="team-a",plugin="namespace-gc",tombstone="gc-4f7c"} 1.7723664e+09
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if len(copied) > 0 {
		t.Errorf("a scrape deep-copied %v; want reads without copies (client.UnsafeDisableDeepCopy)", copied)
	}
}

// A manager rebuilt in the same process registers again: it gets the collector
// already served, so that its SetReader is the one scrapes use.
func TestRegisterTwice(t *testing.T) {
	reg := prometheus.NewRegistry()
	if first, second := Register(reg), Register(reg); first != second {
		t.Error("the second Register returned a collector that is not served")
	}
}

// A deadline past 2262 (a stamp written far ahead is kept until 9999; a delay of
// over ~236 years) is where time.UnixNano overflows: the gauge must not read it
// as a time in the past (overdue).
func TestUnixSecondsBeyond2262(t *testing.T) {
	for _, tt := range []struct {
		at   time.Time
		want float64
	}{
		{time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), 253402300799},
		{time.Date(2318, 4, 12, 23, 47, 16, 0, time.UTC), 10990597636},
		{time.Date(2026, 11, 28, 0, 0, 0, 500_000_000, time.UTC), 1795824000.5},
	} {
		if got := unixSeconds(tt.at); got != tt.want {
			t.Errorf("unixSeconds(%v) = %v, want %v", tt.at, got, tt.want)
		}
	}
}
