package it

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// holdFinalizer is the test's own finalizer: it keeps an object in Terminating so
// that the test can watch a teardown wave wait for it.
const holdFinalizer = "test.limbo.dev/hold"

// holdConfigMap puts holdFinalizer on ConfigMap ns/name and returns what takes
// it off again, once; that runs when the test ends too (the test's namespace
// cannot go while the object is held).
func holdConfigMap(t testing.TB, ns, name string) (release func()) {
	t.Helper()
	patchObject(t, configMapGVK, ns, name, fmt.Sprintf(`{"metadata":{"finalizers":[%q]}}`, holdFinalizer))
	var once sync.Once
	release = func() {
		once.Do(func() { patchObject(t, configMapGVK, ns, name, `{"metadata":{"finalizers":null}}`) })
	}
	t.Cleanup(release)
	return release
}

// chain is base <- mid <- top: mid depends on base, top on mid.
func chain(t *testing.T, extra ...limbov1alpha1.Resource) []limbov1alpha1.Resource {
	return append([]limbov1alpha1.Resource{
		objectResource(t, "top", configMap("top", map[string]any{"k": "v"}, nil), limbov1alpha1.Reference{Resource: "mid"}),
		objectResource(t, "base", configMap("base", map[string]any{"k": "v"}, nil)),
		objectResource(t, "mid", configMap("mid", map[string]any{"k": "v"}, nil), limbov1alpha1.Reference{Resource: "base"}),
	}, extra...)
}

// Default deletion (background, as kubectl delete does): the content goes in
// reverse dependency order, each wave once the previous one is really gone, and
// the Bundle stays (finalizer limbo.dev/teardown) until then, saying what
// remains and, for an object being deleted, the finalizers that hold it: the user
// who finds the Bundle Terminating for long learns whose work it waits for.
func TestTeardownBackgroundReverseOrder(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	b := createBundle(t, ns, "teardown", chain(t)...)
	waitReady(t, b)
	if !slices.Contains(getBundle(t, b).Finalizers, limbov1alpha1.FinalizerTeardown) {
		t.Fatalf("finalizers = %v, want %s", getBundle(t, b).Finalizers, limbov1alpha1.FinalizerTeardown)
	}
	release := holdConfigMap(t, ns, "mid")

	log := watchConfigMaps(t, ns)
	deleteBundle(t, b, metav1.DeletePropagationBackground)

	// Wave 1 (top) is gone, wave 2 (mid) is held by the test's finalizer.
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if err := noObject(configMapGVK, ns, "top")(); err != nil {
			return err
		}
		if mid := getObject(t, configMapGVK, ns, "mid"); mid == nil || mid.GetDeletionTimestamp() == nil {
			return fmt.Errorf("ConfigMap mid is not being deleted")
		}
		return nil
	})
	remaining := func() error {
		cur := &limbov1alpha1.Bundle{}
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(b), cur); err != nil {
			return fmt.Errorf("the Bundle: %w", err)
		}
		if err := conditionMessageIs(cur, "ContentRemaining", metav1.ConditionTrue, "SomeResourcesRemain", "waiting for ConfigMap mid (held by finalizers: "+holdFinalizer+") to be deleted"); err != nil {
			return err
		}
		if err := conditionIs(cur, "DeletionFailure", metav1.ConditionFalse, "AsExpected"); err != nil {
			return err
		}
		if base := getObject(t, configMapGVK, ns, "base"); base == nil || base.GetDeletionTimestamp() != nil {
			return fmt.Errorf("ConfigMap base is deleted while mid, which depends on it, still exists")
		}
		return nil
	}
	testenv.Eventually(t, testenv.DefaultTimeout, remaining)
	testenv.Consistently(t, 3*time.Second, remaining)

	release()
	waitGone(t, configMapGVK, ns, "base")
	waitBundleGone(t, b)

	// The watch saw each wave start only after the previous wave was gone. Its
	// events come after the API server's answers that the test polled: wait for
	// them before stopping it.
	log.waitDeleted(t, "top", "mid", "base")
	log.stop()
	gone, started := log.index(watch.Deleted), log.deletionStarted()
	if gone["top"] >= started["mid"] || gone["mid"] >= started["base"] {
		t.Errorf("deletions out of order (top gone at %d, mid started at %d and gone at %d, base started at %d); events: %v",
			gone["top"], started["mid"], gone["mid"], started["base"], log.events())
	}
}

// A teardown DELETE the API server refuses (an admission policy, a webhook) is a
// DeletionFailure naming the object and the refusal: the Bundle keeps its
// finalizer and the next wave waits. Once the refusal goes, the teardown ends.
func TestTeardownDeleteRefused(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	b := createBundle(t, ns, "refused", chain(t)...)
	waitReady(t, b)
	lift := refuseDeletes(t, getObject(t, configMapGVK, ns, "mid"), "configmaps")

	deleteBundle(t, b, metav1.DeletePropagationBackground)
	stuck := func() error {
		cur := &limbov1alpha1.Bundle{}
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(b), cur); err != nil {
			return fmt.Errorf("the Bundle: %w", err)
		}
		c := meta.FindStatusCondition(cur.Status.Conditions, "DeletionFailure")
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != "DeleteFailed" || !strings.Contains(c.Message, "mid") || !strings.Contains(c.Message, "refused by the test") {
			return fmt.Errorf("DeletionFailure = %+v, want True/DeleteFailed naming mid and the refusal", c)
		}
		if !slices.Contains(cur.Finalizers, limbov1alpha1.FinalizerTeardown) {
			return fmt.Errorf("finalizers = %v, want %s kept", cur.Finalizers, limbov1alpha1.FinalizerTeardown)
		}
		if base := getObject(t, configMapGVK, ns, "base"); base == nil || base.GetDeletionTimestamp() != nil {
			return fmt.Errorf("ConfigMap base is deleted while mid, which depends on it, is still there")
		}
		return noObject(configMapGVK, ns, "top")()
	}
	testenv.Eventually(t, testenv.DefaultTimeout, stuck)
	testenv.Consistently(t, 2*time.Second, stuck)

	lift()
	waitBundleGone(t, b)
	for _, name := range []string{"top", "mid", "base"} {
		waitGone(t, configMapGVK, ns, name)
	}
}

// Objects with a deletion delay are not deleted by a teardown: they are released
// to limbo (no owner, label kept, stamped, pending-deletion) and outlive their
// Bundle; the others go.
func TestTeardownReleasesDelayedObjects(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	delayed := objectResource(t, "db", configMap("db", map[string]any{"k": "v"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: "1h"}))
	b := createBundle(t, ns, "release", chain(t, delayed)...)
	ready := waitReady(t, b)
	start := time.Now().Add(-time.Second).UTC().Truncate(time.Second)
	deleteBundle(t, b, metav1.DeletePropagationBackground)
	waitBundleGone(t, b)
	for _, name := range []string{"top", "mid", "base"} {
		waitGone(t, configMapGVK, ns, name)
	}
	db := getObject(t, configMapGVK, ns, "db")
	if db == nil {
		t.Fatal("ConfigMap db, which has a deletion delay, was deleted by the teardown")
	}
	for _, ref := range db.GetOwnerReferences() {
		if ref.UID == ready.UID {
			t.Errorf("db still has an owner reference to the deleted Bundle: %+v", ref)
		}
	}
	if got := db.GetLabels()[limbov1alpha1.LabelBundle]; got != "release" {
		t.Errorf("db label %s = %q, want release kept", limbov1alpha1.LabelBundle, got)
	}
	if got := db.GetLabels()[limbov1alpha1.LabelPendingDeletion]; got != "true" {
		t.Errorf("db label %s = %q, want true", limbov1alpha1.LabelPendingDeletion, got)
	}
	stamp, err := time.Parse(time.RFC3339, db.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp])
	if err != nil || stamp.Before(start) || stamp.After(time.Now().Add(time.Second)) {
		t.Errorf("db %s = %q (%v), want the time of the teardown", limbov1alpha1.AnnotationDeletionTimestamp, db.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp], err)
	}
}

// --cascade=orphan: limbo deletes nothing and lets the Bundle go; the garbage
// collector removes the objects' owner references to it.
func TestTeardownOrphanCascade(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	b := createBundle(t, ns, "orphan", chain(t)...)
	ready := waitReady(t, b)
	uids := map[string]types.UID{}
	for _, name := range []string{"top", "mid", "base"} {
		uids[name] = getObject(t, configMapGVK, ns, name).GetUID()
	}
	deleteBundle(t, b, metav1.DeletePropagationOrphan)
	waitBundleGone(t, b)
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		for name, uid := range uids {
			u := getObject(t, configMapGVK, ns, name)
			if u == nil || u.GetUID() != uid || u.GetDeletionTimestamp() != nil {
				return fmt.Errorf("ConfigMap %s was deleted with --cascade=orphan", name)
			}
			for _, ref := range u.GetOwnerReferences() {
				if ref.UID == ready.UID {
					return fmt.Errorf("ConfigMap %s still has an owner reference to the deleted Bundle", name)
				}
			}
		}
		return nil
	})
	testenv.Consistently(t, 2*time.Second, func() error {
		for name, uid := range uids {
			if u := getObject(t, configMapGVK, ns, name); u == nil || u.GetUID() != uid || u.GetDeletionTimestamp() != nil {
				return fmt.Errorf("ConfigMap %s was deleted with --cascade=orphan", name)
			}
		}
		return nil
	})
}

// --cascade=foreground: the user asked for everything now: the garbage collector
// deletes the objects, deletion delays included, and then the Bundle goes.
func TestTeardownForegroundCascade(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	delayed := objectResource(t, "db", configMap("db", map[string]any{"k": "v"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: "1h"}))
	b := createBundle(t, ns, "foreground", chain(t, delayed)...)
	waitReady(t, b)
	deleteBundle(t, b, metav1.DeletePropagationForeground)
	waitBundleGone(t, b)
	for _, name := range []string{"top", "mid", "base", "db"} {
		waitGone(t, configMapGVK, ns, name)
	}
}

// deleteBundle deletes a Bundle as `kubectl delete bundle --cascade=...` does;
// background is kubectl's default.
func deleteBundle(t testing.TB, b *limbov1alpha1.Bundle, policy metav1.DeletionPropagation) {
	t.Helper()
	if err := env.Client.Delete(context.Background(), getBundle(t, b), client.PropagationPolicy(policy)); err != nil {
		t.Fatalf("delete Bundle: %v", err)
	}
}

// waitBundleGone waits until the Bundle no longer exists.
func waitBundleGone(t testing.TB, b *limbov1alpha1.Bundle) {
	t.Helper()
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		var cur limbov1alpha1.Bundle
		err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(b), &cur)
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		}
		return fmt.Errorf("Bundle %s still exists: finalizers %v, conditions %+v", b.Name, cur.Finalizers, cur.Status.Conditions)
	})
}

// patchObject sends a JSON merge patch as the test client.
func patchObject(t testing.TB, gvk schema.GroupVersionKind, ns, name, patch string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(ns)
	u.SetName(name)
	if err := env.Client.Patch(context.Background(), u, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("patch %s %s: %v", gvk.Kind, name, err)
	}
}

// configMapLog records the ConfigMap events of a namespace, in the API server's
// order.
type configMapLog struct {
	w    watch.Interface
	mu   sync.Mutex
	evs  []configMapEvent
	done chan struct{}
}

type configMapEvent struct {
	typ         watch.EventType
	name        string
	uid         types.UID
	terminating bool
	// inLimbo: the object carries the deletion stamp or the pending-deletion
	// label.
	inLimbo bool
}

func (e configMapEvent) String() string {
	s := fmt.Sprintf("%s %s", e.typ, e.name)
	if e.terminating {
		s += " (terminating)"
	}
	if e.inLimbo {
		s += " (in limbo)"
	}
	return s
}

func watchConfigMaps(t testing.TB, ns string) *configMapLog {
	t.Helper()
	ctx := testenv.Context(t, 5*time.Minute)
	list, err := env.Clientset.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := env.Clientset.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	l := &configMapLog{w: w, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for ev := range w.ResultChan() {
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if !ok {
				continue
			}
			l.mu.Lock()
			_, stamped := cm.Annotations[limbov1alpha1.AnnotationDeletionTimestamp]
			_, labelled := cm.Labels[limbov1alpha1.LabelPendingDeletion]
			l.evs = append(l.evs, configMapEvent{typ: ev.Type, name: cm.Name, uid: cm.UID, terminating: cm.DeletionTimestamp != nil, inLimbo: stamped || labelled})
			l.mu.Unlock()
		}
	}()
	t.Cleanup(l.stop)
	return l
}

// waitDeleted waits until the log holds a DELETED event for each of names.
func (l *configMapLog) waitDeleted(t testing.TB, names ...string) {
	t.Helper()
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		gone := l.index(watch.Deleted)
		for _, name := range names {
			if _, ok := gone[name]; !ok {
				return fmt.Errorf("no DELETED event for %s; events: %v", name, l.events())
			}
		}
		return nil
	})
}

func (l *configMapLog) stop() {
	l.w.Stop()
	<-l.done
}

func (l *configMapLog) events() []configMapEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]configMapEvent(nil), l.evs...)
}

// index is the position of each object's first event of type typ.
func (l *configMapLog) index(typ watch.EventType) map[string]int {
	out := map[string]int{}
	for i, e := range l.events() {
		if _, seen := out[e.name]; !seen && e.typ == typ {
			out[e.name] = i
		}
	}
	return out
}

// deletionStarted is the position of the first event of each object that shows
// it being deleted: terminating, or gone.
func (l *configMapLog) deletionStarted() map[string]int {
	out := map[string]int{}
	for i, e := range l.events() {
		if _, seen := out[e.name]; !seen && (e.terminating || e.typ == watch.Deleted) {
			out[e.name] = i
		}
	}
	return out
}
