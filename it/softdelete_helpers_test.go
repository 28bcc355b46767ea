package it

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// Helpers of the soft-delete tests (softdelete_*, tombstone_*, kubectl_limbo).

// waitInLimbo waits until the object carries a stamp and the pending-deletion label,
// and returns it with its parsed stamp.
func waitInLimbo(t testing.TB, gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, time.Time) {
	t.Helper()
	u := waitObject(t, gvk, ns, name, func(u *unstructured.Unstructured) error {
		if u.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp] == "" || u.GetLabels()[limbov1alpha1.LabelPendingDeletion] != "true" {
			return fmt.Errorf("%s %s not in limbo yet: annotations %v, labels %v", gvk.Kind, name, u.GetAnnotations(), u.GetLabels())
		}
		return nil
	})
	stamp, err := time.Parse(time.RFC3339, u.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp])
	if err != nil {
		t.Fatalf("%s %s: stamp: %v", gvk.Kind, name, err)
	}
	return u, stamp
}

// notInLimbo fails when u carries the stamp or the pending-deletion label.
func notInLimbo(u *unstructured.Unstructured) error {
	if v, ok := u.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp]; ok {
		return fmt.Errorf("%s %s still has %s=%q", u.GetKind(), u.GetName(), limbov1alpha1.AnnotationDeletionTimestamp, v)
	}
	if v, ok := u.GetLabels()[limbov1alpha1.LabelPendingDeletion]; ok {
		return fmt.Errorf("%s %s still has label %s=%q", u.GetKind(), u.GetName(), limbov1alpha1.LabelPendingDeletion, v)
	}
	return nil
}

// existsWithUID returns a condition that fails when the object is gone or has
// another UID than uid.
func existsWithUID(t testing.TB, gvk schema.GroupVersionKind, ns, name string, uid string) func() error {
	return func() error {
		u := getObject(t, gvk, ns, name)
		if u == nil {
			return fmt.Errorf("%s %s/%s was deleted", gvk.Kind, ns, name)
		}
		if string(u.GetUID()) != uid {
			return fmt.Errorf("%s %s/%s has uid %s, want %s", gvk.Kind, ns, name, u.GetUID(), uid)
		}
		return nil
	}
}

// noPendingDeletions waits until the Bundle's status lists nothing in limbo.
func noPendingDeletions(t testing.TB, b *limbov1alpha1.Bundle) *limbov1alpha1.Bundle {
	t.Helper()
	return waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if len(cur.Status.PendingDeletions) != 0 || cur.Status.PendingDeletionCount != 0 || cur.Status.NextDeletion != nil {
			return fmt.Errorf("pendingDeletions still lists %+v (count %d, next %v)", cur.Status.PendingDeletions, cur.Status.PendingDeletionCount, cur.Status.NextDeletion)
		}
		return nil
	})
}

// configMapDeletion watches a ConfigMap and reports the time its deletion is seen
// on the watch: exact to the watch's latency, not to a poll interval. Start it
// before the deletion can happen.
type configMapDeletion struct {
	w    watch.Interface
	done chan time.Time
	// last is the ConfigMap's last state, as the Deleted event carries it:
	// written before done is sent.
	last *corev1.ConfigMap
}

func watchConfigMapDeletion(t testing.TB, ns, name string) *configMapDeletion {
	t.Helper()
	w := watchConfigMap(t, ns, name)
	d := &configMapDeletion{w: w, done: make(chan time.Time, 1)}
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type == watch.Deleted {
				if cm, ok := ev.Object.(*corev1.ConfigMap); ok && cm.Name == name {
					d.last = cm
					d.done <- time.Now()
					return
				}
			}
		}
	}()
	return d
}

// watchConfigMap watches ConfigMap ns/name until the test ends.
func watchConfigMap(t testing.TB, ns, name string) watch.Interface {
	t.Helper()
	w, err := env.Clientset.CoreV1().ConfigMaps(ns).Watch(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(),
	})
	if err != nil {
		t.Fatalf("watch ConfigMap %s: %v", name, err)
	}
	t.Cleanup(w.Stop)
	return w
}

// wait returns when the deletion was seen, failing t after timeout.
func (d *configMapDeletion) wait(t testing.TB, timeout time.Duration) time.Time {
	t.Helper()
	select {
	case at := <-d.done:
		return at
	case <-time.After(timeout):
		t.Fatalf("no deletion seen within %v", timeout)
		return time.Time{}
	}
}

// waitEarlierTestsGone waits until no Bundle is left in a terminating namespace
// and limbo's deletion counter has stood still for a second: the earlier tests'
// namespaces, deleted at their end, take their Bundles with them, and those
// teardowns' and the reaper's deletions count in the process-wide metrics. (A
// namespace may stay terminating for good once its Bundles are gone: its pods
// wait for a kubelet the test cluster does not have.) A test that expects an
// exact increment of one (run alone: not parallel) takes its baseline after
// this.
func waitEarlierTestsGone(t testing.TB) {
	t.Helper()
	var last engineMetrics
	var since time.Time
	testenv.Eventually(t, 2*testenv.DefaultTimeout, func() error {
		var namespaces corev1.NamespaceList
		if err := env.Client.List(context.Background(), &namespaces); err != nil {
			return err
		}
		terminating := map[string]bool{}
		for _, ns := range namespaces.Items {
			if ns.Status.Phase == corev1.NamespaceTerminating {
				terminating[ns.Name] = true
			}
		}
		var bundles limbov1alpha1.BundleList
		if err := env.Client.List(context.Background(), &bundles); err != nil {
			return err
		}
		for _, b := range bundles.Items {
			if terminating[b.Namespace] {
				return fmt.Errorf("Bundle %s/%s is in a terminating namespace", b.Namespace, b.Name)
			}
		}
		if m := gatherEngineMetrics(t); since.IsZero() || m.deleted != last.deleted {
			last, since = m, time.Now()
		}
		if quiet := time.Since(since); quiet < time.Second {
			return fmt.Errorf("limbo_deletions_total moved %v ago", quiet)
		}
		return nil
	})
}
