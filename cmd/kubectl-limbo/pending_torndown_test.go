package main

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A Bundle being torn down decides nothing by its last pass, whose entries its
// status keeps until it is gone: its teardown releases the orphans it counts
// down, countdown and all, to the reaper, which holds them or not; and it
// cancels its Tombstones and its plugins' items — but those of a plugin
// teardown (deorbit's), which it deletes at their deadlines. pending read the last pass's
// holds (not Ready, an invalid spec) and showed held what the reaper deletes,
// and a countdown, then due, for items nothing deletes any more.
func TestPendingOfABundleBeingTornDown(t *testing.T) {
	in := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: testNow.Add(d).Truncate(time.Second)} }
	for _, stalled := range []bool{false, true} {
		shop := &limbov1alpha1.Bundle{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "shop", UID: uid("shop"),
				DeletionTimestamp: &metav1.Time{Time: testNow}, Finalizers: []string{limbov1alpha1.FinalizerTeardown}},
			Status: limbov1alpha1.BundleStatus{PendingDeletions: []limbov1alpha1.PendingDeletion{
				{APIVersion: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "db", DeleteAfter: in(30 * time.Minute), Message: limbov1alpha1.PendingMessageWaitingForReady},
				{APIVersion: limbov1alpha1.GroupVersion.String(), Kind: "Tombstone", Namespace: "team-a", Name: "shop-gc-1", DeleteAfter: in(5 * time.Minute), Message: `StorageOSNamespace "old"`},
				{APIVersion: "v1", Kind: "Namespace", Name: "node-item", DeleteAfter: in(-time.Minute)},
				// deorbit's teardown's own item, which it deletes.
				{APIVersion: "v1", Kind: "PersistentVolume", Name: "pv-1", Resource: "wipe", DeleteAfter: in(20 * time.Minute)},
			}},
		}
		shop.Annotations = map[string]string{limbov1alpha1.AnnotationTeardownStatePrefix + "wipe": "volumes",
			// A deorbit that gave up: its leftovers keep their stamps, and nothing deletes them.
			limbov1alpha1.AnnotationTeardownDonePrefix + "old-wipe":    "true",
			limbov1alpha1.AnnotationTeardownWarningPrefix + "old-wipe": "gave up after 24h: PersistentVolumeClaim team-a/left"}
		if stalled {
			shop.Status.Conditions = []metav1.Condition{{Type: limbov1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: limbov1alpha1.ReasonInvalidSpec}}
		}
		released := &corev1.ConfigMap{ObjectMeta: inLimbo("team-a", "db", "shop", "1h", stampAgo(30*time.Minute))}
		released.ObjectMeta = releasedBy(released.ObjectMeta, stampAgo(time.Minute))
		counted := &corev1.ConfigMap{ObjectMeta: inLimbo("team-a", "cache", "shop", "1h", stampAgo(10*time.Minute))}
		item := &corev1.ConfigMap{ObjectMeta: inLimbo("team-a", "drive", "", "1h", stampAgo(59*time.Minute))}
		delete(item.Labels, limbov1alpha1.LabelBundle)
		item.Annotations[limbov1alpha1.AnnotationPluginResource] = "team-a/shop/nodes"

		wiped := &corev1.ConfigMap{ObjectMeta: inLimbo("team-a", "volume", "", "1h", stampAgo(30*time.Minute))}
		delete(wiped.Labels, limbov1alpha1.LabelBundle)
		wiped.OwnerReferences = nil
		wiped.Annotations[limbov1alpha1.AnnotationPluginResource] = "team-a/shop/wipe"

		left := &corev1.ConfigMap{ObjectMeta: inLimbo("team-a", "left", "", "1h", stampAgo(2*time.Hour))}
		delete(left.Labels, limbov1alpha1.LabelBundle)
		left.OwnerReferences = nil
		left.Annotations[limbov1alpha1.AnnotationPluginResource] = "team-a/shop/old-wipe"

		f := newFixture(t, nil, []client.Object{shop, released, counted, item, wiped, left}...)
		code, out, errOut := f.run("pending", "-n", "team-a")
		if code != 0 || errOut != "" {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		want := `KIND               NAME        BUNDLE   DELETE-AFTER           TIME-LEFT   MESSAGE
PersistentVolume   pv-1        shop     2026-03-01T12:20:00Z   20m
ConfigMap          db          shop     2026-03-01T12:30:00Z   30m
ConfigMap          volume      shop     2026-03-01T12:30:00Z   30m
ConfigMap          cache       shop     2026-03-01T12:50:00Z   50m         its Bundle is being torn down: the teardown releases it to the reaper with this countdown, once the Bundle's plugin teardowns are done
ConfigMap          left        shop     2026-03-01T11:00:00Z   held        the teardown of resource "old-wipe" ended (gave up after 24h: PersistentVolumeClaim team-a/left): nothing deletes it
Namespace          node-item   shop     2026-03-01T11:59:00Z   held        its Bundle is being deleted: the deletion is cancelled, the item kept
ConfigMap          drive       shop     2026-03-01T12:01:00Z   held        its Bundle is being deleted: the deletion is cancelled, the item kept
Tombstone          shop-gc-1   shop     2026-03-01T12:05:00Z   held        StorageOSNamespace "old"; its Bundle is being deleted: the deletion is cancelled, the item kept
`
		if got := trimTrailingSpaces(out); got != want {
			t.Errorf("spec invalid %v: got\n%s\nwant\n%s", stalled, got, want)
		}
		if strings.Contains(out, "spec is invalid") || strings.Contains(out, limbov1alpha1.PendingMessageWaitingForReady) {
			t.Errorf("a teardown's rows say the last pass's holds hold them:\n%s", out)
		}
	}
}
