package softdelete_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta/testrestmapper"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/impersonation"
	"github.com/limbo-dev/limbo/pkg/shard"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// The engine's tests check the exact API calls each decision makes, against
// controller-runtime's fake client, with a fake clock at now (statemachine_test.go).

const (
	ns           = "team-a"
	pendingKey   = limbov1alpha1.LabelPendingDeletion
	expeditedKey = limbov1alpha1.AnnotationExpeditedFrom
	bundleKey    = limbov1alpha1.LabelBundle
)

var configMapGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

// harness is an engine on a fake client that logs every write.
type harness struct {
	engine   *softdelete.Engine
	client   client.Client
	recorder *record.FakeRecorder
	registry *prometheus.Registry
	calls    []string
	// deleteErr, when set, is what every Delete returns (the object is not deleted).
	deleteErr error
	// deleteLost, when set, is what every Delete returns after deleting the
	// object: its answer was lost.
	deleteLost error
	// patchErr, when set, is what every Patch returns (the object is not changed).
	patchErr error
	// patchLost, when set, is what every Patch returns after patching the
	// object: its answer was lost.
	patchLost error
}

func newHarness(t *testing.T, objs ...client.Object) *harness {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := limbov1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	h := &harness{recorder: record.NewFakeRecorder(100), registry: prometheus.NewRegistry()}
	h.client = fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(testrestmapper.TestOnlyStaticRESTMapper(scheme)).WithObjects(objs...).
		WithInterceptorFuncs(interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				data, err := patch.Data(obj)
				if err != nil {
					return err
				}
				h.calls = append(h.calls, fmt.Sprintf("PATCH %s %s/%s %s %s", kindOf(c, obj), obj.GetNamespace(), obj.GetName(), patch.Type(), data))
				if h.patchErr != nil {
					return h.patchErr
				}
				if h.patchLost != nil {
					if err := c.Patch(ctx, obj, patch, opts...); err != nil {
						return err
					}
					return h.patchLost
				}
				return c.Patch(ctx, obj, patch, opts...)
			},
			Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				o := &client.DeleteOptions{}
				o.ApplyOptions(opts)
				call := fmt.Sprintf("DELETE %s %s/%s", kindOf(c, obj), obj.GetNamespace(), obj.GetName())
				if o.Preconditions != nil && o.Preconditions.UID != nil {
					call += " uid=" + string(*o.Preconditions.UID)
				}
				if o.Preconditions != nil && o.Preconditions.ResourceVersion != nil {
					call += " rv=" + *o.Preconditions.ResourceVersion
				}
				if o.PropagationPolicy != nil {
					call += " propagation=" + string(*o.PropagationPolicy)
				}
				if len(o.DryRun) > 0 {
					call += " dryRun=" + strings.Join(o.DryRun, ",")
				}
				h.calls = append(h.calls, call)
				if h.deleteErr != nil {
					return h.deleteErr
				}
				// The fake client checks a resourceVersion precondition only; the
				// API server checks the UID too.
				if o.Preconditions != nil && o.Preconditions.UID != nil {
					live := obj.DeepCopyObject().(client.Object)
					if err := c.Get(ctx, client.ObjectKeyFromObject(obj), live); err == nil && live.GetUID() != *o.Preconditions.UID {
						return apierrors.NewConflict(schema.GroupResource{Resource: kindOf(c, obj)}, obj.GetName(),
							fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *o.Preconditions.UID, live.GetUID()))
					}
				}
				if err := c.Delete(ctx, obj, opts...); err != nil || h.deleteLost == nil {
					return err
				}
				return h.deleteLost
			},
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				h.calls = append(h.calls, fmt.Sprintf("CREATE %s %s/%s", kindOf(c, obj), obj.GetNamespace(), obj.GetName()))
				return c.Create(ctx, obj, opts...)
			},
		}).Build()
	h.engine = &softdelete.Engine{
		Client:   h.client,
		Reader:   h.client,
		Recorder: h.recorder,
		Clock:    testingclock.NewFakePassiveClock(now),
		Metrics:  softdelete.NewMetrics(h.registry),
	}
	return h
}

func kindOf(c client.Client, obj client.Object) string {
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil {
		return "?"
	}
	return gvk.Kind
}

// events drains the recorded events.
func (h *harness) events() []string {
	var out []string
	for {
		select {
		case e := <-h.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// metric returns the value of a counter or gauge, or a histogram's sample count,
// with the given label value ("" for none); 0 when it has no sample.
func (h *harness) metric(t *testing.T, name, label string) float64 {
	t.Helper()
	families, err := h.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if label != "" && (len(m.GetLabel()) == 0 || m.GetLabel()[0].GetValue() != label) {
				continue
			}
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return 0
}

// wantOneDeletion fails unless limbo_deletions_total counts one deletion with
// result and none with another ("" for none at all).
func (h *harness) wantOneDeletion(t *testing.T, result string) {
	t.Helper()
	for _, r := range []string{softdelete.ResultDeleted, softdelete.ResultGone, softdelete.ResultFailed} {
		want := 0.0
		if r == result {
			want = 1
		}
		if got := h.metric(t, "limbo_deletions_total", r); got != want {
			t.Errorf("limbo_deletions_total{result=%q} = %v, want %v", r, got, want)
		}
	}
}

// get reads obj back from the fake client; nil when it is gone.
func (h *harness) get(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(configMapGVK)
	err := h.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// cm is a ConfigMap with the annotations and labels, as the engine receives it
// (with its kind, as from the cache).
func cm(name string, annotations, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(configMapGVK)
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetUID(types.UID("uid-" + name))
	u.SetAnnotations(annotations)
	u.SetLabels(labels)
	return u
}

// live returns the object as the fake client holds it, with its resourceVersion.
func (h *harness) live(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	u := h.get(t, name)
	if u == nil {
		t.Fatalf("ConfigMap %s does not exist", name)
	}
	return u
}

func bundle() *limbov1alpha1.Bundle {
	return &limbov1alpha1.Bundle{
		TypeMeta:   metav1.TypeMeta{APIVersion: limbov1alpha1.GroupVersion.String(), Kind: "Bundle"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop", UID: "uid-shop"},
	}
}

func mt(t time.Time) *metav1.Time { return &metav1.Time{Time: t} }

func TestEngineOrphan(t *testing.T) {
	stampPatch := func(stamp string) string {
		return `PATCH ConfigMap team-a/db application/merge-patch+json {"metadata":{"annotations":{"limbo.dev/deletionTimestamp":"` + stamp +
			`"},"labels":{"limbo.dev/pending-deletion":"true"},"resourceVersion":"999"}}`
	}
	const deleteCall = "DELETE ConfigMap team-a/db uid=uid-db rv=999 propagation=Background"
	entry := func(stamp, deadline *metav1.Time, message string) *limbov1alpha1.PendingDeletion {
		return &limbov1alpha1.PendingDeletion{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "db",
			DeletionTimestamp: stamp, DeleteAfter: deadline, Message: message}
	}
	tests := []struct {
		name        string
		annotations map[string]string
		labels      map[string]string
		created     time.Time // the object's creationTimestamp; zero for none
		deleteErr   error
		wantCalls   []string
		wantEvents  []string
		want        softdelete.Outcome // Decision is not compared; Err by wantErr
		wantErr     string             // substring of Outcome.Err; "" means nil
		// wantResult is the limbo_deletions_total result counted, "" for none.
		wantResult   string
		wantLateness float64 // observations of limbo_deletion_lateness_seconds
		// wantLive checks the object afterwards; nil means it must be gone.
		wantLive func(*unstructured.Unstructured) error
	}{
		{
			name:       "no delay: deleted now, with a UID precondition",
			wantCalls:  []string{deleteCall},
			wantEvents: []string{"Normal Deleted ConfigMap team-a/db deleted"},
			want:       softdelete.Outcome{Gone: true},
			wantResult: softdelete.ResultDeleted,
		},
		{
			name:       "no delay, already gone: NotFound is success, but no Deleted event",
			deleteErr:  apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "db"),
			wantCalls:  []string{deleteCall},
			want:       softdelete.Outcome{Gone: true},
			wantResult: softdelete.ResultGone,
			wantLive:   func(*unstructured.Unstructured) error { return nil },
		},
		{
			name:      "no delay, changed since the fresh read: the precondition fails; read and decide again at once",
			deleteErr: apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "db", fmt.Errorf("Precondition failed: ResourceVersion in precondition: 999, ResourceVersion in object meta: 1000")),
			wantCalls: []string{deleteCall},
			want:      softdelete.Outcome{ReadAgain: true, Pending: entry(nil, nil, "deleting")},
			wantLive:  func(*unstructured.Unstructured) error { return nil },
		},
		{
			name:       "no delay, the delete fails: listed with the error, retried",
			deleteErr:  apierrors.NewServiceUnavailable("etcd timeout"),
			wantCalls:  []string{deleteCall},
			wantEvents: []string{"Warning DeleteFailed ConfigMap team-a/db: delete ConfigMap team-a/db: etcd timeout"},
			want:       softdelete.Outcome{Pending: entry(nil, nil, "delete ConfigMap team-a/db: etcd timeout")},
			wantErr:    "etcd timeout",
			wantResult: softdelete.ResultFailed,
			wantLive:   func(*unstructured.Unstructured) error { return nil },
		},
		{
			// Crossplane's Usage protection denies the DELETE of a resource in
			// use with 409 and its message as the reason: a refusal, not a
			// change since the read (read again and retried at once, for good,
			// and reported nowhere).
			name: "no delay, a webhook denies the delete with 409: a failure like any refusal",
			deleteErr: &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 409,
				Reason: "This resource is in-use by 1 usage(s)", Message: `admission webhook "nousages.protection.crossplane.io" denied the request: in use`}},
			wantCalls:  []string{deleteCall},
			wantEvents: []string{`Warning DeleteFailed ConfigMap team-a/db: delete ConfigMap team-a/db: admission webhook "nousages.protection.crossplane.io" denied the request: in use`},
			want:       softdelete.Outcome{Pending: entry(nil, nil, `delete ConfigMap team-a/db: admission webhook "nousages.protection.crossplane.io" denied the request: in use`)},
			wantErr:    "in use",
			wantResult: softdelete.ResultFailed,
			wantLive:   func(*unstructured.Unstructured) error { return nil },
		},
		{
			name:        "delay, no stamp: stamped now (to the second) and labelled, guarded by the resourceVersion",
			annotations: map[string]string{delayKey: "1h"},
			wantCalls:   []string{stampPatch("2025-03-14T12:30:45Z")},
			wantEvents:  []string{"Normal DeletionScheduled ConfigMap team-a/db is in limbo for 1h0m0s: deleted at 2025-03-14T13:30:45Z"},
			want: softdelete.Outcome{WakeAt: now.Add(time.Hour - 250*time.Millisecond),
				Pending: entry(mt(nowSecond), mt(nowSecond.Add(time.Hour)), "")},
			wantLive: func(u *unstructured.Unstructured) error {
				if u.GetAnnotations()[stampKey] != "2025-03-14T12:30:45Z" || u.GetLabels()[pendingKey] != "true" || u.GetAnnotations()[delayKey] != "1h" {
					return fmt.Errorf("not stamped: %v %v", u.GetAnnotations(), u.GetLabels())
				}
				return nil
			},
		},
		{
			name:        "zero delay, no stamp: stamped, and come back at once",
			annotations: map[string]string{delayKey: "0s"},
			wantCalls:   []string{stampPatch("2025-03-14T12:30:45Z")},
			wantEvents:  []string{"Normal DeletionScheduled ConfigMap team-a/db is in limbo for 0s: deleted at 2025-03-14T12:30:45Z"},
			want:        softdelete.Outcome{WakeAt: now, Pending: entry(mt(nowSecond), mt(nowSecond), "")},
			wantLive:    func(*unstructured.Unstructured) error { return nil },
		},
		{
			name:        "countdown running: nothing written, back at the deadline",
			annotations: map[string]string{delayKey: "1h", stampKey: "2025-03-14T12:00:00Z"},
			labels:      map[string]string{pendingKey: "true"},
			want: softdelete.Outcome{WakeAt: now.Add(29*time.Minute + 14750*time.Millisecond),
				Pending: entry(mt(at("2025-03-14T12:00:00Z")), mt(at("2025-03-14T13:00:00Z")), "")},
			wantLive: func(*unstructured.Unstructured) error { return nil },
		},
		{
			name:         "deadline reached exactly: deleted, lateness observed",
			annotations:  map[string]string{delayKey: "30m45250ms", stampKey: "2025-03-14T12:00:00Z"},
			labels:       map[string]string{pendingKey: "true"},
			wantCalls:    []string{deleteCall},
			wantEvents:   []string{"Normal Deleted ConfigMap team-a/db deleted"},
			want:         softdelete.Outcome{Gone: true},
			wantResult:   softdelete.ResultDeleted,
			wantLateness: 1,
		},
		{
			name:        "a second before the deadline: waits a second; the status shows the deadline rounded up to the second, as the API server keeps it",
			annotations: map[string]string{delayKey: "30m46250ms", stampKey: "2025-03-14T12:00:00Z"},
			labels:      map[string]string{pendingKey: "true"},
			want: softdelete.Outcome{WakeAt: now.Add(time.Second),
				Pending: entry(mt(at("2025-03-14T12:00:00Z")), mt(at("2025-03-14T12:30:47Z")), "")},
			wantLive: func(*unstructured.Unstructured) error { return nil },
		},
		{
			// Another writer (a kubectl label --overwrite of the object's labels, a
			// GitOps tool that owns them) removed the label: kubectl limbo pending
			// and the reaper, once the object is released, find it by the label.
			name:        "waiting, its pending-deletion label removed: the label is put back, guarded by the resourceVersion",
			annotations: map[string]string{delayKey: "30m46250ms", stampKey: "2025-03-14T12:00:00Z"},
			wantCalls:   []string{`PATCH ConfigMap team-a/db application/merge-patch+json {"metadata":{"labels":{"limbo.dev/pending-deletion":"true"},"resourceVersion":"999"}}`},
			want: softdelete.Outcome{WakeAt: now.Add(time.Second),
				Pending: entry(mt(at("2025-03-14T12:00:00Z")), mt(at("2025-03-14T12:30:47Z")), "")},
			wantLive: func(u *unstructured.Unstructured) error {
				if u.GetLabels()[pendingKey] != "true" {
					return fmt.Errorf("the label is not back: %v", u.GetLabels())
				}
				return nil
			},
		},
		{
			name:        "invalid delay: never deleted, nothing written, Warning",
			annotations: map[string]string{delayKey: "forever"},
			wantEvents:  []string{`Warning InvalidDeletionDelay ConfigMap team-a/db is never deleted: invalid limbo.dev/deletionDelay "forever": not a duration (Go syntax: 10m, 24h, 1h30m)`},
			want:        softdelete.Outcome{Pending: entry(nil, nil, `invalid limbo.dev/deletionDelay "forever": not a duration (Go syntax: 10m, 24h, 1h30m); never deleted until fixed`)},
			wantLive: func(u *unstructured.Unstructured) error {
				if _, ok := u.GetLabels()[pendingKey]; ok {
					return fmt.Errorf("labelled: %v", u.GetLabels())
				}
				return nil
			},
		},
		{
			name:        "invalid delay even with a stamp: never deleted",
			annotations: map[string]string{delayKey: "-1s", stampKey: "2020-01-01T00:00:00Z"},
			labels:      map[string]string{pendingKey: "true"},
			wantEvents:  []string{`Warning InvalidDeletionDelay ConfigMap team-a/db is never deleted: invalid limbo.dev/deletionDelay "-1s": must not be negative`},
			want:        softdelete.Outcome{Pending: entry(nil, nil, `invalid limbo.dev/deletionDelay "-1s": must not be negative; never deleted until fixed`)},
			wantLive:    func(*unstructured.Unstructured) error { return nil },
		},
		{
			name:        "unparsable stamp: re-stamped now, with a Warning",
			annotations: map[string]string{delayKey: "1h", stampKey: "yesterday"},
			labels:      map[string]string{pendingKey: "true"},
			wantCalls:   []string{stampPatch("2025-03-14T12:30:45Z")},
			wantEvents: []string{
				`Warning InvalidDeletionTimestamp ConfigMap team-a/db: invalid limbo.dev/deletionTimestamp "yesterday": not an RFC 3339 time; the countdown restarts`,
				"Normal DeletionScheduled ConfigMap team-a/db is in limbo for 1h0m0s: deleted at 2025-03-14T13:30:45Z",
			},
			want: softdelete.Outcome{WakeAt: now.Add(time.Hour - 250*time.Millisecond),
				Pending: entry(mt(nowSecond), mt(nowSecond.Add(time.Hour)), "")},
			wantLive: liveStamp("2025-03-14T12:30:45Z"),
		},
		{
			// A copy of an object in limbo (restored from a backup, re-created
			// from its manifest) carries its original's stamp, long due: the
			// deadline is that of an object gone, not this one's.
			name:        "a copy's stamp, its countdown ended before the copy was made: re-stamped now, with a Warning, not deleted",
			annotations: map[string]string{delayKey: "1h", stampKey: "2025-03-13T09:00:00Z"},
			labels:      map[string]string{pendingKey: "true"},
			created:     at("2025-03-14T11:30:45Z"),
			wantCalls:   []string{stampPatch("2025-03-14T12:30:45Z")},
			wantEvents: []string{
				`Warning InvalidDeletionTimestamp ConfigMap team-a/db: limbo.dev/deletionTimestamp "2025-03-13T09:00:00Z": its countdown ended at 2025-03-13T10:00:00Z, before this object was created at 2025-03-14T11:30:45Z; a copy of an object that was in limbo (restored from a backup, or re-created from its manifest) counts down anew`,
				"Normal DeletionScheduled ConfigMap team-a/db is in limbo for 1h0m0s: deleted at 2025-03-14T13:30:45Z",
			},
			want: softdelete.Outcome{WakeAt: now.Add(time.Hour - 250*time.Millisecond),
				Pending: entry(mt(nowSecond), mt(nowSecond.Add(time.Hour)), "")},
			wantLive: liveStamp("2025-03-14T12:30:45Z"),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obj := cm("db", tc.annotations, tc.labels)
			obj.SetCreationTimestamp(metav1.NewTime(tc.created))
			h := newHarness(t, obj)
			h.deleteErr = tc.deleteErr
			out := h.engine.Orphan(context.Background(), bundle(), h.live(t, "db"), nil)

			if !reflect.DeepEqual(h.calls, tc.wantCalls) {
				t.Errorf("API calls:\n%s\nwant:\n%s", strings.Join(h.calls, "\n"), strings.Join(tc.wantCalls, "\n"))
			}
			if got := h.events(); !reflect.DeepEqual(got, tc.wantEvents) {
				t.Errorf("events:\n%q\nwant:\n%q", got, tc.wantEvents)
			}
			switch {
			case tc.wantErr == "" && out.Err != nil:
				t.Errorf("Err = %v, want nil", out.Err)
			case tc.wantErr != "" && (out.Err == nil || !strings.Contains(out.Err.Error(), tc.wantErr)):
				t.Errorf("Err = %v, want one saying %q", out.Err, tc.wantErr)
			}
			if out.Gone != tc.want.Gone || out.ReadAgain != tc.want.ReadAgain || !out.WakeAt.Equal(tc.want.WakeAt) {
				t.Errorf("Gone/ReadAgain/WakeAt = %v/%v/%v, want %v/%v/%v", out.Gone, out.ReadAgain, out.WakeAt, tc.want.Gone, tc.want.ReadAgain, tc.want.WakeAt)
			}
			if !pendingEqual(out.Pending, tc.want.Pending) {
				t.Errorf("Pending = %+v, want %+v", out.Pending, tc.want.Pending)
			}
			h.wantOneDeletion(t, tc.wantResult)
			if got := h.metric(t, "limbo_deletion_lateness_seconds", ""); got != tc.wantLateness {
				t.Errorf("lateness observations = %v, want %v", got, tc.wantLateness)
			}
			live := h.get(t, "db")
			switch {
			case tc.wantLive == nil && live != nil:
				t.Errorf("db still exists")
			case tc.wantLive != nil && live == nil:
				t.Errorf("db was deleted")
			case tc.wantLive != nil:
				if err := tc.wantLive(live); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// liveStamp checks that the live object carries the stamp want.
func liveStamp(want string) func(*unstructured.Unstructured) error {
	return func(u *unstructured.Unstructured) error {
		if got := u.GetAnnotations()[stampKey]; got != want {
			return fmt.Errorf("stamp %q, want %q", got, want)
		}
		return nil
	}
}

func pendingEqual(a, b *limbov1alpha1.PendingDeletion) bool {
	if a == nil || b == nil {
		return a == b
	}
	timeEq := func(x, y *metav1.Time) bool {
		if x == nil || y == nil {
			return x == y
		}
		return x.Time.Equal(y.Time)
	}
	return a.APIVersion == b.APIVersion && a.Kind == b.Kind && a.Namespace == b.Namespace && a.Name == b.Name &&
		a.Message == b.Message && timeEq(a.DeletionTimestamp, b.DeletionTimestamp) && timeEq(a.DeleteAfter, b.DeleteAfter)
}

// A stamp is written only on the object that was decided about: a concurrent
// change (a stale resourceVersion) makes it a Conflict, nothing is written, and
// the caller comes back at once to read and decide again.
func TestEngineOrphanStaleObjectConflicts(t *testing.T) {
	h := newHarness(t, cm("db", map[string]string{delayKey: "1h"}, nil))
	stale := h.live(t, "db")
	stale.SetResourceVersion("998")
	out := h.engine.Orphan(context.Background(), bundle(), stale, nil)
	if out.Err != nil || !out.ReadAgain || !out.WakeAt.IsZero() {
		t.Fatalf("Err/ReadAgain/WakeAt = %v/%v/%v, want nil/true/zero", out.Err, out.ReadAgain, out.WakeAt)
	}
	if got := h.events(); len(got) != 0 {
		t.Errorf("events %q after a failed stamp", got)
	}
	if _, stamped := h.live(t, "db").GetAnnotations()[stampKey]; stamped {
		t.Error("db was stamped")
	}
}

// An orphan deleted by someone else before its stamp (the cache had not shown
// the delete yet) is read again, as after a Conflict: NotFound is no failure.
// The pass failed with "not found" in the object's entry and backed off.
func TestEngineOrphanGoneBeforeItsStamp(t *testing.T) {
	h := newHarness(t, cm("db", map[string]string{delayKey: "1h"}, nil))
	cached := h.live(t, "db")
	if err := h.client.Delete(context.Background(), cached.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	out := h.engine.Orphan(context.Background(), bundle(), cached, nil)
	if out.Err != nil || !out.ReadAgain || !out.WakeAt.IsZero() || out.Pending == nil || out.Pending.Message != "" {
		t.Fatalf("Err/ReadAgain/WakeAt/Pending = %v/%v/%v/%+v, want nil/true/zero/an entry without a message", out.Err, out.ReadAgain, out.WakeAt, out.Pending)
	}
	if got := h.events(); len(got) != 0 {
		t.Errorf("events %q after a failed stamp", got)
	}
}

// A stamp refused as Invalid shows the API server's causes sorted in the
// object's pendingDeletions entry: the API server lists them in the order its
// validation walked a map (an object its CRD's schema no longer accepts), and
// another order at the next pass would be another status write.
func TestEngineStampRefusedShowsCausesSorted(t *testing.T) {
	h := newHarness(t, cm("db", map[string]string{delayKey: "1h"}, nil))
	bad := func(f string) *field.Error { return field.Invalid(field.NewPath("spec", f), "x", "not allowed") }
	var messages []string
	for _, causes := range []field.ErrorList{{bad("b"), bad("a")}, {bad("a"), bad("b")}} {
		h.patchErr = apierrors.NewInvalid(schema.GroupKind{Group: "example.com", Kind: "Widget"}, "db", causes)
		out := h.engine.Orphan(context.Background(), bundle(), h.live(t, "db"), nil)
		if out.Err == nil || out.Pending == nil {
			t.Fatalf("Err/Pending = %v/%v, want the refusal listed", out.Err, out.Pending)
		}
		messages = append(messages, out.Pending.Message)
	}
	const want = `[spec.a: Invalid value: "x": not allowed, spec.b: Invalid value: "x": not allowed]`
	if messages[0] != messages[1] || !strings.Contains(messages[0], want) {
		t.Errorf("messages %q; want one text, with %s", messages, want)
	}
}

// Disown removes the Bundle's owner reference, and takes the object out of limbo
// if a countdown runs on it (event DeletionCancelled then).
// A dependent gone before Disown's write has no owner reference left to remove:
// no error, no event.
func TestEngineDisownOfAnObjectGone(t *testing.T) {
	b := bundle()
	h := newHarness(t)
	gone := cm("db", map[string]string{delayKey: "1h", stampKey: "2025-03-14T12:00:00Z"}, map[string]string{pendingKey: "true"})
	if err := h.engine.Disown(context.Background(), b, gone, b, "why"); err != nil {
		t.Errorf("err = %v, want none: a dependent gone is disowned", err)
	}
	if ev := h.events(); len(ev) != 0 {
		t.Errorf("events %q, want none", ev)
	}
}

func TestEngineDisown(t *testing.T) {
	b := bundle()
	owned := func(name string, annotations, labels map[string]string) *unstructured.Unstructured {
		u := cm(name, annotations, labels)
		u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "limbo.dev/v1alpha1", Kind: "Bundle", Name: b.Name, UID: b.UID, Controller: ptr.To(true)}})
		return u
	}
	stampedDB := map[string]string{delayKey: "1h", stampKey: "2025-03-14T12:00:00Z"}
	for _, tc := range []struct {
		name       string
		obj        *unstructured.Unstructured
		wantPatch  string
		wantEvents []string
	}{
		{name: "no countdown", obj: owned("db", nil, nil),
			wantPatch: `{"metadata":{"ownerReferences":[],"resourceVersion":"999"}}`},
		{name: "in limbo", obj: owned("db", stampedDB, map[string]string{pendingKey: "true"}),
			wantPatch:  `{"metadata":{"annotations":{"limbo.dev/deletionTimestamp":null,"limbo.dev/expeditedFrom":null,"limbo.dev/pluginResource":null,"limbo.dev/released":null},"labels":{"limbo.dev/pending-deletion":null},"ownerReferences":[],"resourceVersion":"999"}}`,
			wantEvents: []string{"Normal DeletionCancelled ConfigMap team-a/db: deletion cancelled (why)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.obj)
			if err := h.engine.Disown(context.Background(), b, h.live(t, "db"), b, "why"); err != nil {
				t.Fatal(err)
			}
			if want := []string{"PATCH ConfigMap team-a/db application/merge-patch+json " + tc.wantPatch}; !reflect.DeepEqual(h.calls, want) {
				t.Errorf("API calls:\n%q\nwant:\n%q", h.calls, want)
			}
			if got := h.events(); !reflect.DeepEqual(got, tc.wantEvents) {
				t.Errorf("events %q, want %q", got, tc.wantEvents)
			}
		})
	}
}

// Released is the reaper's claim: it takes only an object that a Release
// handed over — the Bundle's label, the released mark, and no controller.
func TestReleased(t *testing.T) {
	released := map[string]string{limbov1alpha1.AnnotationReleased: "2025-03-14T12:00:00Z"}
	labelled := map[string]string{bundleKey: "shop"}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		labels      map[string]string
		controlled  bool
		want        bool
	}{
		{name: "labelled, marked, no controller", annotations: released, labels: labelled, want: true},
		{name: "no Bundle label (kubectl limbo cancel, a plugin's item)", annotations: released},
		{name: "no released mark (orphaned by the garbage collector)", labels: labelled},
		{name: "controlled (adopted)", annotations: released, labels: labelled, controlled: true},
		// A label that names no Bundle that can exist (written by hand, never by
		// limbo): no Bundle of its name can be read to decide its holds.
		{name: "an empty Bundle label", annotations: released, labels: map[string]string{bundleKey: ""}},
		{name: "a Bundle label that is no object name", annotations: released, labels: map[string]string{bundleKey: "Shop_1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := cm("db", tc.annotations, tc.labels)
			if tc.controlled {
				obj.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "limbo.dev/v1alpha1", Kind: "Bundle", Name: "shop", UID: "uid-shop", Controller: ptr.To(true)}})
			}
			if got := softdelete.Released(obj); got != tc.want {
				t.Errorf("Released = %v, want %v", got, tc.want)
			}
		})
	}
}

// A countdown wakes its caller at its deadline, reckoned from the instant the
// decision was made: a stamp write that takes a while does not make the wake-up
// late by as much.
func TestStampWakesAtTheDeadlineHoweverLongTheWrite(t *testing.T) {
	slowPatch := func(h *harness, clk *testingclock.FakePassiveClock) client.Client {
		return interceptor.NewClient(h.client.(client.WithWatch), interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			clk.SetTime(clk.Now().Add(5 * time.Second))
			return c.Patch(ctx, obj, patch, opts...)
		}})
	}
	deadline := at("2025-03-14T12:40:45Z") // stamped at 12:30:45 with 10m
	t.Run("an object", func(t *testing.T) {
		h := newHarness(t, cm("db", map[string]string{delayKey: "10m"}, nil))
		clk := testingclock.NewFakePassiveClock(now)
		h.engine.Clock, h.engine.Client = clk, slowPatch(h, clk)
		if out := h.engine.Orphan(context.Background(), bundle(), h.live(t, "db"), nil); out.Decision.Action != softdelete.ActionStamp || !out.WakeAt.Equal(deadline) {
			t.Errorf("outcome %+v, want stamped, WakeAt %v", out, deadline)
		}
	})
	t.Run("a plugin's object item", func(t *testing.T) {
		h := newHarness(t, cm("drive", nil, nil))
		clk := testingclock.NewFakePassiveClock(now)
		h.engine.Clock, h.engine.Client = clk, slowPatch(h, clk)
		out := h.engine.ProcessItems(context.Background(), bundle(), softdelete.ItemSet{Owner: owner, Delay: "10m",
			Items: []softdelete.Item{h.item(t, "drive", false, "n1", 0)}})
		if out.Err != nil || !out.WakeAt.Equal(deadline) {
			t.Errorf("outcome %+v, want WakeAt %v", out, deadline)
		}
	})
}

// OrphanAt decides at the caller's instant, not at a later reading of the
// clock: the reaper judges an object's holds at now (an adopter is looked for
// only when it is due then), and an object whose deadline falls between that
// judgement and the decision was not checked for an adopter at all. Decided at
// the clock, it was taken for due — a fresh read on the way to a delete — and
// it woke the caller late by as long as the hold's read took.
func TestOrphanAtDecidesAtTheCallersInstant(t *testing.T) {
	h := newHarness(t, cm("db", map[string]string{delayKey: "1h", stampKey: "2025-03-14T11:30:05Z", limbov1alpha1.AnnotationReleased: "2025-03-14T11:30:05Z"},
		map[string]string{pendingKey: "true", bundleKey: "shop"}))
	h.engine.Clock = testingclock.NewFakePassiveClock(at("2025-03-14T12:30:10Z")) // the deadline, 12:30:05, passed meanwhile
	h.engine.Reader = interceptor.NewClient(h.client.(client.WithWatch), interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		h.calls = append(h.calls, fmt.Sprintf("GET %s %s", kindOf(c, obj), key))
		return c.Get(ctx, key, obj, opts...)
	}})
	obj := h.live(t, "db")
	out := h.engine.OrphanAt(context.Background(), obj, obj, softdelete.ClaimReleased, at("2025-03-14T12:30:00Z"))
	if out.Err != nil || out.Decision.Action != softdelete.ActionWait || !out.WakeAt.Equal(at("2025-03-14T12:30:05Z")) {
		t.Errorf("Err/Action/WakeAt = %v/%s/%v, want nil/Wait/2025-03-14T12:30:05Z", out.Err, out.Decision.Action, out.WakeAt)
	}
	if len(h.calls) != 0 {
		t.Errorf("API calls %q, want none: not due at the caller's instant", h.calls)
	}
	if ev := h.events(); len(ev) != 0 {
		t.Errorf("events %q, want none", ev)
	}
	if h.get(t, "db") == nil {
		t.Error("db was deleted")
	}
}

// An object the engine deleted is counted once: a pass that decides again on a
// copy from before the delete (the cache has not seen it yet) finds it gone on
// its fresh read, and that is the same deletion, not one more object found gone.
// Before, it was counted "deleted" and then "gone". Gone objects the engine did
// not delete are still counted "gone", also one of its name re-created.
func TestEngineCountsItsDeletionOnce(t *testing.T) {
	due := map[string]string{delayKey: "1m", stampKey: "2025-03-14T12:00:00Z"}
	t.Run("deleted, then decided again on the stale copy", func(t *testing.T) {
		h := newHarness(t, cm("db", due, map[string]string{pendingKey: "true"}))
		stale := h.live(t, "db")
		for range 2 {
			if out := h.engine.Orphan(context.Background(), bundle(), stale.DeepCopy(), nil); !out.Gone || out.Err != nil {
				t.Fatalf("outcome %+v, want gone", out)
			}
		}
		h.wantOneDeletion(t, softdelete.ResultDeleted)
	})
	// The engine remembers its deletes for a minute or more (two generations,
	// turned over once a minute has passed): a burst of deletes in the same
	// minute forgets none of them, nor does the turn-over that follows.
	t.Run("deleted in a burst, a turn-over since, each decided again on its stale copy", func(t *testing.T) {
		names := []string{"a", "b", "c", "d"}
		var objs []client.Object
		for _, n := range names {
			objs = append(objs, cm(n, due, map[string]string{pendingKey: "true"}))
		}
		h := newHarness(t, objs...)
		clk := testingclock.NewFakePassiveClock(now)
		h.engine.Clock = clk
		stale := map[string]*unstructured.Unstructured{}
		for i, at := range []time.Duration{0, time.Second, 2 * time.Second, 62 * time.Second} {
			clk.SetTime(now.Add(at))
			stale[names[i]] = h.live(t, names[i])
			if out := h.engine.Orphan(context.Background(), bundle(), stale[names[i]].DeepCopy(), nil); !out.Gone {
				t.Fatalf("%s: outcome %+v, want deleted", names[i], out)
			}
		}
		for _, n := range names {
			if out := h.engine.Orphan(context.Background(), bundle(), stale[n], nil); !out.Gone {
				t.Fatalf("%s again: outcome %+v, want gone", n, out)
			}
		}
		if got := h.metric(t, "limbo_deletions_total", softdelete.ResultGone); got != 0 {
			t.Errorf("limbo_deletions_total{gone} = %v, want 0: each was the engine's own delete", got)
		}
	})
	t.Run("gone before the engine came", func(t *testing.T) {
		h := newHarness(t, cm("db", due, map[string]string{pendingKey: "true"}))
		stale := h.live(t, "db")
		if err := h.client.Delete(context.Background(), stale.DeepCopy()); err != nil {
			t.Fatal(err)
		}
		if out := h.engine.Orphan(context.Background(), bundle(), stale, nil); !out.Gone {
			t.Fatalf("outcome %+v, want gone", out)
		}
		h.wantOneDeletion(t, softdelete.ResultGone)
	})
}

// A delete is decided on a fresh read, never on the caller's (cached, listed)
// copy: each case gives the engine a stale copy that is due, while the API
// server holds what changed meanwhile.
func TestEngineOrphanDecidesDeleteOnFreshRead(t *testing.T) {
	due := map[string]string{delayKey: "1m", stampKey: "2025-03-14T12:00:00Z"}
	pending := map[string]string{pendingKey: "true"}
	bundleUID := types.UID("uid-shop")
	tests := []struct {
		name       string
		fresh      func(*unstructured.Unstructured) // what the API server holds
		claim      softdelete.Claim
		released   bool // the caller's copy has no controller: released by a teardown
		wantCalls  []string
		wantGone   bool
		wantErr    bool
		wantHeld   bool
		wantPend   string // Pending.Message; "-" for no entry
		wantResult string
	}{
		{
			name:      "unchanged: deleted with UID and resourceVersion preconditions",
			fresh:     func(*unstructured.Unstructured) {},
			wantCalls: []string{"DELETE ConfigMap team-a/db uid=uid-db rv=999 propagation=Background"}, wantGone: true, wantPend: "-",
			wantResult: softdelete.ResultDeleted,
		},
		{
			name: "the delay was raised just before the deadline: waits",
			fresh: func(u *unstructured.Unstructured) {
				u.SetAnnotations(map[string]string{delayKey: "48h", stampKey: "2025-03-14T12:00:00Z"})
			},
			wantPend: "",
		},
		{
			name: "kubectl limbo cancel landed just before the deadline: no longer the Bundle's",
			fresh: func(u *unstructured.Unstructured) {
				u.SetOwnerReferences(nil)
				u.SetAnnotations(map[string]string{delayKey: "1m"})
				u.SetLabels(nil)
			},
			claim:    softdelete.ControlledBy(bundleUID),
			wantPend: "-",
		},
		{
			name: "adopted by a new Bundle a moment ago: not the reaper's any more",
			fresh: func(u *unstructured.Unstructured) {
				u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "limbo.dev/v1alpha1", Kind: "Bundle", Name: "shop", UID: "uid-new", Controller: ptr.To(true)}})
			},
			claim:    softdelete.ClaimReleased,
			released: true,
			wantPend: "-",
		},
		{
			// A pass adopts with its apply, then cancels in a second write: in
			// between the object is controlled and still carries every limbo mark.
			name: "adopted a moment ago, its countdown not cancelled yet: still marked released, but controlled: not the reaper's",
			fresh: func(u *unstructured.Unstructured) {
				u.SetAnnotations(map[string]string{delayKey: "1m", stampKey: "2025-03-14T12:00:00Z", limbov1alpha1.AnnotationReleased: "2025-03-14T12:00:00Z"})
				u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "limbo.dev/v1alpha1", Kind: "Bundle", Name: "shop", UID: "uid-new", Controller: ptr.To(true)}})
			},
			claim:    softdelete.ClaimReleased,
			released: true,
			wantPend: "-",
		},
		{
			name: "controlled by another owner since the pass decided: not this Bundle's",
			fresh: func(u *unstructured.Unstructured) {
				u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "limbo.dev/v1alpha1", Kind: "Bundle", Name: "other", UID: "uid-other", Controller: ptr.To(true)}})
			},
			wantPend: "-",
		},
		{
			name:     "its Bundle changed just before the delete: not deleted, still listed",
			fresh:    func(*unstructured.Unstructured) {},
			claim:    func(metav1.Object) (softdelete.ClaimVerdict, error) { return softdelete.ClaimDeferred, nil },
			wantPend: "not deleted yet: it or its Bundle changed just before the delete; deciding again",
		},
		{
			// The caller lists it with its own reason (a Bundle's readiness gate).
			name:     "held by its claim (a Bundle not Ready, no adopter): not deleted, Held, no entry",
			fresh:    func(*unstructured.Unstructured) {},
			claim:    func(metav1.Object) (softdelete.ClaimVerdict, error) { return softdelete.ClaimHeld, nil },
			wantHeld: true, wantPend: "-",
		},
		{
			name:  "the claim failed (its hand-over refused): not deleted, listed with the error, which the caller retries",
			fresh: func(*unstructured.Unstructured) {},
			claim: func(metav1.Object) (softdelete.ClaimVerdict, error) {
				return softdelete.ClaimDeferred, errors.New("hand ConfigMap db over to Bundle new: forbidden")
			},
			wantErr:  true,
			wantPend: "not deleted: hand ConfigMap db over to Bundle new: forbidden",
		},
		{
			name: "re-created under another UID: the orphan is gone",
			fresh: func(u *unstructured.Unstructured) {
				u.SetUID("uid-new")
			},
			wantGone: true, wantPend: "-", wantResult: softdelete.ResultGone,
		},
		{
			name: "terminating, held by a finalizer: listed, not deleted again",
			fresh: func(u *unstructured.Unstructured) {
				u.SetFinalizers([]string{"kubernetes.io/pvc-protection"})
				u.SetDeletionTimestamp(mt(now))
			},
			wantPend: "being deleted; held by finalizers: kubernetes.io/pvc-protection",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stored := cm("db", due, pending)
			stored.SetLabels(map[string]string{pendingKey: "true", bundleKey: "shop"})
			stored.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "limbo.dev/v1alpha1", Kind: "Bundle", Name: "shop", UID: bundleUID, Controller: ptr.To(true)}})
			if tc.claim == nil {
				tc.claim = softdelete.ControlledBy(bundleUID)
			}
			if tc.released {
				stored.SetOwnerReferences(nil)
			}
			cached := stored.DeepCopy()
			tc.fresh(stored)
			h := newHarness(t, stored)
			cached.SetResourceVersion(h.live(t, "db").GetResourceVersion())
			cached.SetGroupVersionKind(configMapGVK)
			out := h.engine.Orphan(context.Background(), bundle(), cached, tc.claim)
			if !reflect.DeepEqual(h.calls, tc.wantCalls) {
				t.Errorf("API calls:\n%s\nwant:\n%s", strings.Join(h.calls, "\n"), strings.Join(tc.wantCalls, "\n"))
			}
			if (out.Err != nil) != tc.wantErr || out.Gone != tc.wantGone || out.Held != tc.wantHeld {
				t.Errorf("Err/Gone/Held = %v/%v/%v, want an error %v/%v/%v", out.Err, out.Gone, out.Held, tc.wantErr, tc.wantGone, tc.wantHeld)
			}
			switch {
			case tc.wantPend == "-" && out.Pending != nil:
				t.Errorf("Pending = %+v, want none", out.Pending)
			case tc.wantPend != "-" && (out.Pending == nil || out.Pending.Message != tc.wantPend):
				t.Errorf("Pending = %+v, want message %q", out.Pending, tc.wantPend)
			}
			h.wantOneDeletion(t, tc.wantResult)
		})
	}
}

// A due orphan whose fresh read fails is not decided on the stale copy, nor
// taken for gone: nothing is deleted, it stays listed with the error, and the
// caller retries.
func TestEngineOrphanFreshReadFailed(t *testing.T) {
	h := newHarness(t, cm("db", map[string]string{delayKey: "1m", stampKey: "2025-03-14T12:00:00Z"}, map[string]string{pendingKey: "true"}))
	h.engine.Reader = interceptor.NewClient(h.client.(client.WithWatch), interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
		return apierrors.NewServiceUnavailable("etcd leader changed")
	}})
	out := h.engine.Orphan(context.Background(), bundle(), h.live(t, "db"), nil)
	if out.Err == nil || out.Gone || out.Pending == nil || !strings.HasPrefix(out.Pending.Message, "read ConfigMap team-a/db before deleting it: ") {
		t.Errorf("outcome %+v, pending %+v: want the read's error, listed, not gone", out, out.Pending)
	}
	if len(h.calls) != 0 {
		t.Errorf("API calls %q, want none", h.calls)
	}
	h.wantOneDeletion(t, "")
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok || u.Unwrap() == nil {
			return err
		}
		err = u.Unwrap()
	}
}

func TestEngineDesired(t *testing.T) {
	const cancelPatch = `PATCH ConfigMap team-a/db application/merge-patch+json {"metadata":{"annotations":{"limbo.dev/deletionTimestamp":null,"limbo.dev/expeditedFrom":null,"limbo.dev/pluginResource":null,"limbo.dev/released":null},"labels":{"limbo.dev/pending-deletion":null}}}`
	tests := []struct {
		name          string
		annotations   map[string]string
		labels        map[string]string
		wantCancelled bool
	}{
		{name: "not in limbo: nothing written", annotations: map[string]string{delayKey: "1h"}, labels: map[string]string{bundleKey: "shop"}},
		{name: "stamped and labelled", annotations: map[string]string{delayKey: "1h", stampKey: "2025-03-14T12:00:00Z"}, labels: map[string]string{bundleKey: "shop", pendingKey: "true"}, wantCancelled: true},
		{name: "labelled only", labels: map[string]string{bundleKey: "shop", pendingKey: "true"}, wantCancelled: true},
		{name: "stamped with an invalid delay", annotations: map[string]string{delayKey: "soon", stampKey: "2025-03-14T12:00:00Z"}, wantCancelled: true},
		// kubectl limbo expedite's note of when the countdown started goes with
		// the countdown: nothing of limbo's is left.
		{name: "expedited", annotations: map[string]string{delayKey: "1h", stampKey: "2025-03-14T11:00:00Z", expeditedKey: "2025-03-14T12:00:00Z"},
			labels: map[string]string{bundleKey: "shop", pendingKey: "true"}, wantCancelled: true},
		// A note alone (left by a cancel that did not remove it) is no mark: a
		// pass writes nothing for it.
		{name: "a note only: nothing written", annotations: map[string]string{delayKey: "1h", expeditedKey: "2025-03-14T12:00:00Z"}, labels: map[string]string{bundleKey: "shop"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, cm("db", tc.annotations, tc.labels))
			cancelled, err := h.engine.Desired(context.Background(), bundle(), h.live(t, "db"))
			if err != nil {
				t.Fatal(err)
			}
			if cancelled != tc.wantCancelled {
				t.Errorf("cancelled = %v, want %v", cancelled, tc.wantCancelled)
			}
			var wantCalls, wantEvents []string
			if tc.wantCancelled {
				wantCalls = []string{cancelPatch}
				wantEvents = []string{"Normal DeletionCancelled ConfigMap team-a/db is desired again: deletion cancelled"}
			}
			if !reflect.DeepEqual(h.calls, wantCalls) {
				t.Errorf("API calls %q, want %q", h.calls, wantCalls)
			}
			if got := h.events(); !reflect.DeepEqual(got, wantEvents) {
				t.Errorf("events %q, want %q", got, wantEvents)
			}
			live := h.live(t, "db")
			if _, ok := live.GetAnnotations()[stampKey]; ok {
				t.Errorf("stamp kept: %v", live.GetAnnotations())
			}
			if _, ok := live.GetLabels()[pendingKey]; ok {
				t.Errorf("label kept: %v", live.GetLabels())
			}
			if _, ok := live.GetAnnotations()[expeditedKey]; ok && tc.wantCancelled {
				t.Errorf("expedite's note kept: %v", live.GetAnnotations())
			}
			if live.GetLabels()[bundleKey] != tc.labels[bundleKey] || live.GetAnnotations()[delayKey] != tc.annotations[delayKey] {
				t.Errorf("cancel changed more than the stamp and the label: %v %v", live.GetLabels(), live.GetAnnotations())
			}
		})
	}
}

func TestEngineRelease(t *testing.T) {
	b := bundle()
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "parent", UID: "uid-parent"}
	owned := func(annotations map[string]string) *unstructured.Unstructured {
		u := cm("db", annotations, map[string]string{bundleKey: "shop"})
		u.SetOwnerReferences([]metav1.OwnerReference{
			other,
			{APIVersion: limbov1alpha1.GroupVersion.String(), Kind: "Bundle", Name: "shop", UID: b.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)},
		})
		return u
	}
	const refs = `"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"parent","uid":"uid-parent"}]`
	// parent is an owner outside the Bundle: it exists, so its reference stays.
	parent := func() *unstructured.Unstructured {
		p := cm("parent", nil, nil)
		p.SetUID("uid-parent")
		return p
	}

	t.Run("not stamped: stamped, label kept, owner reference to the Bundle removed", func(t *testing.T) {
		h := newHarness(t, owned(map[string]string{delayKey: "24h"}), parent())
		if err := h.engine.Release(context.Background(), b, h.live(t, "db"), b, nil); err != nil {
			t.Fatal(err)
		}
		want := []string{`PATCH ConfigMap team-a/db application/merge-patch+json {"metadata":{"annotations":{"limbo.dev/deletionTimestamp":"2025-03-14T12:30:45Z","limbo.dev/released":"2025-03-14T12:30:45Z"},"labels":{"limbo.dev/pending-deletion":"true"},"resourceVersion":"999"}}`, `PATCH ConfigMap team-a/db application/merge-patch+json {"metadata":{` + refs + `,"resourceVersion":"1000"}}`}
		if !reflect.DeepEqual(h.calls, want) {
			t.Errorf("API calls:\n%q\nwant:\n%q", h.calls, want)
		}
		if got, want := h.events(), []string{"Normal DeletionScheduled ConfigMap team-a/db released to limbo for 24h0m0s: deleted at 2025-03-15T12:30:45Z"}; !reflect.DeepEqual(got, want) {
			t.Errorf("events %q, want %q", got, want)
		}
		live := h.live(t, "db")
		if !reflect.DeepEqual(live.GetOwnerReferences(), []metav1.OwnerReference{other}) || live.GetLabels()[bundleKey] != "shop" ||
			live.GetLabels()[pendingKey] != "true" || live.GetAnnotations()[stampKey] != "2025-03-14T12:30:45Z" {
			t.Errorf("released object: %v", live.Object["metadata"])
		}
	})

	// A stamp the release replaces — unparsable, or a copy's whose countdown
	// ended before the copy was made — is told by a Warning, as the pass and
	// the reaper tell it; the release said only "released".
	for _, tc := range []struct {
		name, stamp string
		created     time.Time
		wantWarning string
	}{
		{"an unparsable stamp", "tomorrow", time.Time{},
			`Warning InvalidDeletionTimestamp ConfigMap team-a/db: invalid limbo.dev/deletionTimestamp "tomorrow": not an RFC 3339 time; the countdown restarts`},
		{"a copy's stamp", "2025-03-13T09:00:00Z", now.Add(-time.Hour),
			`Warning InvalidDeletionTimestamp ConfigMap team-a/db: limbo.dev/deletionTimestamp "2025-03-13T09:00:00Z": its countdown ended at 2025-03-13T10:00:00Z, before this object was created at 2025-03-14T11:30:45Z; a copy of an object that was in limbo (restored from a backup, or re-created from its manifest) counts down anew`},
	} {
		t.Run("restamped, "+tc.name+": told by a Warning", func(t *testing.T) {
			u := owned(map[string]string{delayKey: "1h", stampKey: tc.stamp})
			u.SetCreationTimestamp(metav1.NewTime(tc.created))
			h := newHarness(t, u, parent())
			if err := h.engine.Release(context.Background(), b, h.live(t, "db"), b, nil); err != nil {
				t.Fatal(err)
			}
			if live := h.live(t, "db"); live.GetAnnotations()[stampKey] != "2025-03-14T12:30:45Z" {
				t.Errorf("stamp %q after the release, want the countdown restarted at 2025-03-14T12:30:45Z", live.GetAnnotations()[stampKey])
			}
			want := []string{tc.wantWarning, "Normal DeletionScheduled ConfigMap team-a/db released to limbo for 1h0m0s: deleted at 2025-03-14T13:30:45Z"}
			if got := h.events(); !reflect.DeepEqual(got, want) {
				t.Errorf("events %q, want %q", got, want)
			}
		})
	}

	t.Run("owner references that would have the collector delete it go with the Bundle's; others stay", func(t *testing.T) {
		u := owned(map[string]string{delayKey: "24h"})
		sibling := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "web", UID: "uid-web"}
		gone := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "ghost", UID: "uid-ghost"}
		replaced := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "reborn", UID: "uid-reborn-before"}
		unserved := metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Gizmo", Name: "g", UID: "uid-g"}
		u.SetOwnerReferences(append([]metav1.OwnerReference{sibling, gone, replaced, unserved}, u.GetOwnerReferences()...))
		web := cm("web", nil, map[string]string{bundleKey: "shop"}) // an object of the Bundle, released or not
		web.SetUID("uid-web")
		reborn := cm("reborn", nil, nil)
		reborn.SetUID("uid-reborn")
		h := newHarness(t, u, web, reborn, parent())
		if err := h.engine.Release(context.Background(), b, h.live(t, "db"), b, nil); err != nil {
			t.Fatal(err)
		}
		refs := `"ownerReferences":[{"apiVersion":"example.com/v1","kind":"Gizmo","name":"g","uid":"uid-g"},{"apiVersion":"v1","kind":"ConfigMap","name":"parent","uid":"uid-parent"}]`
		want := []string{`PATCH ConfigMap team-a/db application/merge-patch+json {"metadata":{"annotations":{"limbo.dev/deletionTimestamp":"2025-03-14T12:30:45Z","limbo.dev/released":"2025-03-14T12:30:45Z"},"labels":{"limbo.dev/pending-deletion":"true"},"resourceVersion":"999"}}`, `PATCH ConfigMap team-a/db application/merge-patch+json {"metadata":{` + refs + `,"resourceVersion":"1000"}}`}
		if !reflect.DeepEqual(h.calls, want) {
			t.Errorf("API calls:\n%q\nwant:\n%q", h.calls, want)
		}
	})

	t.Run("already stamped: the stamp is kept", func(t *testing.T) {
		h := newHarness(t, owned(map[string]string{delayKey: "24h", stampKey: "2025-03-14T00:00:00Z"}), parent())
		if err := h.engine.Release(context.Background(), b, h.live(t, "db"), b, nil); err != nil {
			t.Fatal(err)
		}
		want := []string{`PATCH ConfigMap team-a/db application/merge-patch+json {"metadata":{"annotations":{"limbo.dev/released":"2025-03-14T12:30:45Z"},"labels":{"limbo.dev/pending-deletion":"true"},"resourceVersion":"999"}}`, `PATCH ConfigMap team-a/db application/merge-patch+json {"metadata":{` + refs + `,"resourceVersion":"1000"}}`}
		if !reflect.DeepEqual(h.calls, want) {
			t.Errorf("API calls:\n%q\nwant:\n%q", h.calls, want)
		}
		if got := h.live(t, "db").GetAnnotations()[stampKey]; got != "2025-03-14T00:00:00Z" {
			t.Errorf("stamp = %q", got)
		}
	})

	t.Run("for an adopter, due or without a delay: released all the same, the event names the adopter", func(t *testing.T) {
		for _, tc := range []struct {
			annotations map[string]string
			event       string
		}{
			{map[string]string{delayKey: "1h", stampKey: "2025-03-14T00:00:00Z"}, "(deadline 2025-03-14T01:00:00Z)"},
			{nil, "(due)"},
		} {
			h := newHarness(t, owned(tc.annotations), parent())
			if err := h.engine.Release(context.Background(), b, h.live(t, "db"), b, &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "new"}}); err != nil {
				t.Fatal(err)
			}
			want := []string{`PATCH ConfigMap team-a/db application/merge-patch+json {"metadata":{"annotations":{"limbo.dev/released":"2025-03-14T12:30:45Z"},"labels":{"limbo.dev/pending-deletion":"true"},"resourceVersion":"999"}}`, `PATCH ConfigMap team-a/db application/merge-patch+json {"metadata":{` + refs + `,"resourceVersion":"1000"}}`}
			if !reflect.DeepEqual(h.calls, want) {
				t.Errorf("API calls:\n%q\nwant:\n%q", h.calls, want)
			}
			if got, want := h.events(), []string{`Normal DeletionScheduled ConfigMap team-a/db released to limbo for Bundle "new", which declares it to adopt it: deleted if no Bundle does any more ` + tc.event}; !reflect.DeepEqual(got, want) {
				t.Errorf("events %q, want %q", got, want)
			}
			if live := h.live(t, "db"); !softdelete.Released(live) {
				t.Errorf("not Released: %v", live.Object["metadata"])
			}
		}
	})

	// A sharded controller's cache shows only its shard: released to an
	// adopter, the object goes into the adopter's shard, so that the adopter
	// sees it and is woken; released to none, it keeps its Bundle's, and its
	// shard's reaper deletes it.
	t.Run("sharded: released into the adopter's shard", func(t *testing.T) {
		passed := limbov1alpha1.BundleStatus{ObservedGeneration: 1}
		sel, err := shard.Parse("limbo.dev/shard=a")
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name    string
			adopter *limbov1alpha1.Bundle
			labels  string
		}{
			{"an adopter of the rest", &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "new"}, Status: passed}, `"labels":{"limbo.dev/shard":null},`},
			{"an adopter of shard b", &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "new", Labels: map[string]string{"limbo.dev/shard": "b", "team": "x"}}, Status: passed},
				`"labels":{"limbo.dev/shard":"b"},`},
			// A shard no controller runs (a typo): moved there, the object would
			// be in no cache, no reaper's listing and no status, for good.
			{"an adopter no controller has passed", &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "new", Labels: map[string]string{"limbo.dev/shard": "zzz"}}}, ""},
			{"no adopter", nil, ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				live := owned(map[string]string{delayKey: "1h"})
				live.SetLabels(map[string]string{bundleKey: "shop", "limbo.dev/shard": "a"})
				h := newHarness(t, live, parent())
				h.engine.Shard = sel
				if err := h.engine.Release(context.Background(), b, h.live(t, "db"), b, tc.adopter); err != nil {
					t.Fatal(err)
				}
				// The shard label goes with the owner references: the object
				// moves to the adopter's shard released, not still shop's.
				want := []string{`PATCH ConfigMap team-a/db application/merge-patch+json {"metadata":{"annotations":{"limbo.dev/deletionTimestamp":"2025-03-14T12:30:45Z","limbo.dev/released":"2025-03-14T12:30:45Z"},"labels":{"limbo.dev/pending-deletion":"true"},"resourceVersion":"999"}}`,
					`PATCH ConfigMap team-a/db application/merge-patch+json {"metadata":{` + tc.labels + refs + `,"resourceVersion":"1000"}}`}
				if !reflect.DeepEqual(h.calls, want) {
					t.Errorf("API calls:\n%q\nwant:\n%q", h.calls, want)
				}
			})
		}
	})

	// The owner references went with the write that lost the shard label: no
	// later pass releases the object again, so its release is announced now or
	// never, and the failure returned says why it stayed in this shard.
	t.Run("sharded, the adopter's shard label dropped by a policy: released, announced, and failing", func(t *testing.T) {
		sel, err := shard.Parse("limbo.dev/shard=a")
		if err != nil {
			t.Fatal(err)
		}
		adopter := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "new", Labels: map[string]string{"limbo.dev/shard": "b"}},
			Status: limbov1alpha1.BundleStatus{ObservedGeneration: 1}}
		live := owned(map[string]string{delayKey: "1h"})
		live.SetLabels(map[string]string{bundleKey: "shop", "limbo.dev/shard": "a"})
		h := newHarness(t, live, parent())
		h.engine.Shard = sel
		h.engine.Client = interceptor.NewClient(h.client.(client.WithWatch), interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			data, err := patch.Data(obj)
			if err != nil {
				return err
			}
			// The policy: the shard label the write sets goes.
			stripped := strings.Replace(string(data), `"labels":{"limbo.dev/shard":"b"},`, "", 1)
			return c.Patch(ctx, obj, client.RawPatch(patch.Type(), []byte(stripped)), opts...)
		}})
		err = h.engine.Release(context.Background(), b, h.live(t, "db"), b, adopter)
		if !errors.Is(err, softdelete.ErrMarksNotKept) || !strings.Contains(err.Error(), `has label limbo.dev/shard "a", not "b"`) {
			t.Errorf("Release: %v, want the shard label not kept", err)
		}
		if got, want := h.events(), []string{`Normal DeletionScheduled ConfigMap team-a/db released to limbo for Bundle "new", which declares it to adopt it: deleted if no Bundle does any more (deadline 2025-03-14T13:30:45Z)`}; !reflect.DeepEqual(got, want) {
			t.Errorf("events %q, want %q", got, want)
		}
		if live := h.live(t, "db"); !softdelete.Released(live) || live.GetLabels()["limbo.dev/shard"] != "a" {
			t.Errorf("released object: %v, want it released, still in shard a", live.Object["metadata"])
		}
	})

	t.Run("invalid delay: released unstamped with a warning, the reaper's to stamp once fixed", func(t *testing.T) {
		h := newHarness(t, owned(map[string]string{delayKey: "forever"}), parent())
		if err := h.engine.Release(context.Background(), b, h.live(t, "db"), b, nil); err != nil {
			t.Fatal(err)
		}
		want := []string{`PATCH ConfigMap team-a/db application/merge-patch+json {"metadata":{"annotations":{"limbo.dev/released":"2025-03-14T12:30:45Z"},"labels":{"limbo.dev/pending-deletion":"true"},"resourceVersion":"999"}}`, `PATCH ConfigMap team-a/db application/merge-patch+json {"metadata":{` + refs + `,"resourceVersion":"1000"}}`}
		if !reflect.DeepEqual(h.calls, want) {
			t.Errorf("API calls:\n%q\nwant:\n%q", h.calls, want)
		}
		if got, want := h.events(), []string{`Warning InvalidDeletionDelay ConfigMap team-a/db released to limbo, never deleted until its delay is fixed: invalid limbo.dev/deletionDelay "forever": not a duration (Go syntax: 10m, 24h, 1h30m)`}; !reflect.DeepEqual(got, want) {
			t.Errorf("events %q, want %q", got, want)
		}
		live := h.live(t, "db")
		if !softdelete.Released(live) {
			t.Fatalf("not Released: %v", live.Object["metadata"])
		}
		// Fixed: the reaper's pass stamps it.
		live.SetAnnotations(map[string]string{delayKey: "1h", limbov1alpha1.AnnotationReleased: "2025-03-14T12:30:45Z"})
		h.calls = nil
		if out := h.engine.Orphan(context.Background(), live, live, softdelete.ClaimReleased); out.Err != nil || out.Decision.Action != softdelete.ActionStamp {
			t.Fatalf("after the fix: %+v, want a stamp", out)
		}
	})

	t.Run("unparsable stamp: restamped now as it is released, as the event says", func(t *testing.T) {
		h := newHarness(t, owned(map[string]string{delayKey: "24h", stampKey: "yesterday"}), parent())
		if err := h.engine.Release(context.Background(), b, h.live(t, "db"), b, nil); err != nil {
			t.Fatal(err)
		}
		if got := h.live(t, "db").GetAnnotations()[stampKey]; got != "2025-03-14T12:30:45Z" {
			t.Errorf("stamp = %q, want the countdown restarted now (2025-03-14T12:30:45Z), as the DeletionScheduled event announces", got)
		}
	})

	t.Run("as a ServiceAccount that may not delete it: refused, still the Bundle's, nothing written", func(t *testing.T) {
		h := newHarness(t, owned(map[string]string{delayKey: "24h"}), parent())
		h.deleteErr = apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "db", errors.New(`User "system:serviceaccount:team-a:deployer" cannot delete`))
		ctx := impersonation.WithServiceAccount(context.Background(), ns, "deployer")
		if err := h.engine.Release(ctx, b, h.live(t, "db"), b, nil); !apierrors.IsForbidden(unwrapAll(err)) {
			t.Fatalf("err = %v, want the dry-run delete's Forbidden", err)
		}
		if want := []string{"DELETE ConfigMap team-a/db uid=uid-db dryRun=All"}; !reflect.DeepEqual(h.calls, want) { // the dry run, only
			t.Errorf("API calls:\n%q\nwant:\n%q", h.calls, want)
		}
		if live := h.live(t, "db"); softdelete.Released(live) || metav1.GetControllerOf(live) == nil {
			t.Errorf("handed over to the reaper, which deletes as limbo: %v", live.Object["metadata"])
		}
	})

	// A dry run that fails otherwise (a timeout, a 5xx) does not blame the
	// ServiceAccount: the message sent users to its RBAC for an API server's
	// hiccup.
	t.Run("as a ServiceAccount, the dry run failing otherwise: refused, the ServiceAccount not blamed", func(t *testing.T) {
		h := newHarness(t, owned(map[string]string{delayKey: "24h"}), parent())
		h.deleteErr = apierrors.NewServiceUnavailable("etcd leader changed")
		ctx := impersonation.WithServiceAccount(context.Background(), ns, "deployer")
		err := h.engine.Release(ctx, b, h.live(t, "db"), b, nil)
		if err == nil || strings.Contains(err.Error(), "may not delete") || !strings.Contains(err.Error(), "etcd leader changed") {
			t.Fatalf("err = %v, want the dry run's failure, not a refusal", err)
		}
		if live := h.live(t, "db"); softdelete.Released(live) {
			t.Errorf("released although the dry run failed: %v", live.Object["metadata"])
		}
	})

	// The ServiceAccount's permission is asked by a dry run, which must stay
	// one: a real delete here would delete the object as the Bundle goes, its
	// delay ignored.
	t.Run("as a ServiceAccount that may delete it: asked by a dry run, then released, not deleted", func(t *testing.T) {
		h := newHarness(t, owned(map[string]string{delayKey: "24h"}), parent())
		ctx := impersonation.WithServiceAccount(context.Background(), ns, "deployer")
		if err := h.engine.Release(ctx, b, h.live(t, "db"), b, nil); err != nil {
			t.Fatal(err)
		}
		want := []string{"DELETE ConfigMap team-a/db uid=uid-db dryRun=All",
			`PATCH ConfigMap team-a/db application/merge-patch+json {"metadata":{"annotations":{"limbo.dev/deletionTimestamp":"2025-03-14T12:30:45Z","limbo.dev/released":"2025-03-14T12:30:45Z"},"labels":{"limbo.dev/pending-deletion":"true"},"resourceVersion":"999"}}`, `PATCH ConfigMap team-a/db application/merge-patch+json {"metadata":{` + refs + `,"resourceVersion":"1000"}}`}
		if !reflect.DeepEqual(h.calls, want) {
			t.Errorf("API calls:\n%q\nwant:\n%q", h.calls, want)
		}
		if live := h.live(t, "db"); !softdelete.Released(live) {
			t.Errorf("not released: %v", live.Object["metadata"])
		}
	})

	// A dry run that finds nothing to delete is no refusal of the
	// ServiceAccount's: the release goes on, and its guarded write tells whether
	// the object is still there. No DeleteFailed warning blames the ServiceAccount.
	t.Run("as a ServiceAccount, the dry run finding it gone: no refusal", func(t *testing.T) {
		h := newHarness(t, owned(map[string]string{delayKey: "24h"}), parent())
		h.deleteErr = apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "db")
		ctx := impersonation.WithServiceAccount(context.Background(), ns, "deployer")
		if err := h.engine.Release(ctx, b, h.live(t, "db"), b, nil); err != nil {
			t.Fatalf("err = %v, want the release written", err)
		}
		for _, e := range h.events() {
			if strings.HasPrefix(e, "Warning") {
				t.Errorf("event %q, want no warning", e)
			}
		}
	})

	t.Run("stale object: Conflict, nothing written", func(t *testing.T) {
		h := newHarness(t, owned(map[string]string{delayKey: "24h"}), parent())
		stale := h.live(t, "db")
		stale.SetResourceVersion("998")
		if err := h.engine.Release(context.Background(), b, stale, b, nil); !apierrors.IsConflict(unwrapAll(err)) {
			t.Fatalf("err = %v, want a Conflict", err)
		}
		if refs := h.live(t, "db").GetOwnerReferences(); len(refs) != 2 {
			t.Errorf("owner references changed: %v", refs)
		}
	})
}

func TestEnginePending(t *testing.T) {
	h := newHarness(t)
	p := h.engine.Pending(cm("db", map[string]string{delayKey: "1h"}, nil), "waiting for every resource of the Bundle to be Ready")
	want := &limbov1alpha1.PendingDeletion{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "db", Message: "waiting for every resource of the Bundle to be Ready"}
	if !pendingEqual(p, want) {
		t.Errorf("not stamped: %+v, want %+v", p, want)
	}
	p = h.engine.Pending(cm("db", map[string]string{delayKey: "1h", stampKey: "2025-03-14T12:00:00Z"}, nil), "waiting")
	want = &limbov1alpha1.PendingDeletion{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "db", Message: "waiting",
		DeletionTimestamp: mt(at("2025-03-14T12:00:00Z")), DeleteAfter: mt(at("2025-03-14T13:00:00Z"))}
	if !pendingEqual(p, want) {
		t.Errorf("stamped: %+v, want %+v", p, want)
	}
	// An unparsable stamp is no countdown: it restarts when the hold ends.
	p = h.engine.Pending(cm("db", map[string]string{delayKey: "1h", stampKey: "yesterday"}, nil), "waiting")
	want = &limbov1alpha1.PendingDeletion{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "db", Message: "waiting"}
	if !pendingEqual(p, want) {
		t.Errorf("unparsable stamp: %+v, want %+v", p, want)
	}
	p = h.engine.Pending(cm("db", map[string]string{delayKey: "never"}, nil), "waiting")
	if p.DeleteAfter != nil || !strings.HasPrefix(p.Message, `invalid limbo.dev/deletionDelay "never"`) {
		t.Errorf("invalid delay: %+v, want the error, not the waiting message", p)
	}
	if len(h.calls) != 0 {
		t.Errorf("Pending wrote: %q", h.calls)
	}
}

func TestEngineTombstones(t *testing.T) {
	item := limbov1alpha1.ExternalItem{Kind: "StorageOSNamespace", ID: "4f7c", Name: "old-team"}
	name := softdelete.TombstoneName("shop", "storage-ns-gc", item)

	t.Run("name is deterministic", func(t *testing.T) {
		if name != softdelete.TombstoneName("shop", "storage-ns-gc", item) || !strings.HasPrefix(name, "shop-storage-ns-gc-") || len(name) != len("shop-storage-ns-gc-")+10 {
			t.Errorf("TombstoneName = %q", name)
		}
		if other := softdelete.TombstoneName("cart", "storage-ns-gc", item); other == name {
			t.Errorf("two Bundles share Tombstone name %q", name)
		}
		if long := softdelete.TombstoneName(strings.Repeat("b", 253), "storage-ns-gc", item); len(long) > 253 {
			t.Errorf("TombstoneName is %d characters long, more than a name may have", len(long))
		}
		if other := softdelete.TombstoneName("shop", "storage-ns-gc", limbov1alpha1.ExternalItem{Kind: item.Kind, ID: "other"}); other == name {
			t.Errorf("two items share the Tombstone %q", name)
		}
		// Two long Bundle names that differ past the cut share the shortened
		// prefix: the hash, which covers the Bundle's name, tells them apart.
		long := strings.Repeat("b", 250)
		if a, b := softdelete.TombstoneName(long+"-1", "storage-ns-gc", item), softdelete.TombstoneName(long+"-2", "storage-ns-gc", item); a == b {
			t.Errorf("two Bundles share Tombstone name %q", a)
		}
	})

	t.Run("orphan: a stamped Tombstone owned by the Bundle", func(t *testing.T) {
		h := newHarness(t)
		b := bundle()
		created, err := h.engine.OrphanExternal(context.Background(), b, "namespace-gc", "storage-ns-gc", "10m", item)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"CREATE Tombstone team-a/" + name}; !reflect.DeepEqual(h.calls, want) {
			t.Errorf("API calls %q, want %q", h.calls, want)
		}
		var ts limbov1alpha1.Tombstone
		if err := h.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &ts); err != nil {
			t.Fatal(err)
		}
		wantOwner := metav1.OwnerReference{APIVersion: limbov1alpha1.GroupVersion.String(), Kind: "Bundle", Name: "shop", UID: b.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
		if !reflect.DeepEqual(ts.Labels, map[string]string{bundleKey: "shop", pendingKey: "true"}) ||
			!reflect.DeepEqual(ts.Annotations, map[string]string{stampKey: "2025-03-14T12:30:45Z", delayKey: "10m"}) ||
			!reflect.DeepEqual(ts.Finalizers, []string{limbov1alpha1.FinalizerHardDelete}) ||
			!reflect.DeepEqual(ts.OwnerReferences, []metav1.OwnerReference{wantOwner}) ||
			ts.Spec != (limbov1alpha1.TombstoneSpec{Plugin: "namespace-gc", Resource: "storage-ns-gc", Item: item}) {
			t.Errorf("Tombstone = %+v", ts)
		}
		if created == nil || created.UID != ts.UID || created.Name != name {
			t.Errorf("OrphanExternal returned %+v, want the Tombstone it created", created)
		}
		if got, want := h.events(), []string{`Normal DeletionScheduled StorageOSNamespace "old-team" is in limbo (Tombstone ` + name + `) for 10m0s: deleted at 2025-03-14T12:40:45Z`}; !reflect.DeepEqual(got, want) {
			t.Errorf("events %q, want %q", got, want)
		}

		// Idempotent: the same orphan again changes nothing.
		h.calls = nil
		again, err := h.engine.OrphanExternal(context.Background(), b, "namespace-gc", "storage-ns-gc", "20m", item)
		if err != nil {
			t.Fatal(err)
		}
		if again == nil || again.UID != ts.UID || again.Annotations[delayKey] != "10m" || again.Annotations[stampKey] != "2025-03-14T12:30:45Z" {
			t.Errorf("second call returned %+v, want the existing Tombstone, unchanged", again)
		}
		if want := []string{"CREATE Tombstone team-a/" + name}; !reflect.DeepEqual(h.calls, want) {
			t.Errorf("second call: API calls %q, want only the refused create %q", h.calls, want)
		}
		if got := h.events(); len(got) != 0 {
			t.Errorf("events on the second call: %q", got)
		}

		p := h.engine.TombstonePending(&ts)
		want := limbov1alpha1.PendingDeletion{APIVersion: limbov1alpha1.GroupVersion.String(), Kind: "Tombstone", Namespace: ns, Name: name,
			DeletionTimestamp: mt(nowSecond), DeleteAfter: mt(nowSecond.Add(10 * time.Minute)), Message: `StorageOSNamespace "old-team"`}
		if !pendingEqual(&p, &want) {
			t.Errorf("TombstonePending = %+v, want %+v", p, want)
		}
		ts.Status.Attempts, ts.Status.LastError = 2, "409: namespace still has volumes"
		if p := h.engine.TombstonePending(&ts); p.Message != `StorageOSNamespace "old-team": attempt 2 failed: 409: namespace still has volumes` {
			t.Errorf("TombstonePending message = %q", p.Message)
		}
	})

	// No delay: due at once. An empty limbo.dev/deletionDelay would be an
	// invalid one, and the item never deleted.
	t.Run("orphan without a delay: no delay annotation, due at once", func(t *testing.T) {
		h := newHarness(t)
		ts, err := h.engine.OrphanExternal(context.Background(), bundle(), "namespace-gc", "storage-ns-gc", "", item)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(ts.Annotations, map[string]string{stampKey: "2025-03-14T12:30:45Z"}) || !softdelete.Due(now, ts) {
			t.Errorf("Tombstone annotations %v, due %v: want the stamp only, due", ts.Annotations, softdelete.Due(now, ts))
		}
		if got, want := h.events(), []string{`Normal DeletionScheduled StorageOSNamespace "old-team" is in limbo (Tombstone ` + name + `)`}; !reflect.DeepEqual(got, want) {
			t.Errorf("events %q, want %q", got, want)
		}
	})

	t.Run("pending with an invalid delay: never deleted until fixed", func(t *testing.T) {
		h := newHarness(t)
		ts := &limbov1alpha1.Tombstone{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Annotations: map[string]string{delayKey: "never", stampKey: "2025-03-14T12:00:00Z"}},
			Spec: limbov1alpha1.TombstoneSpec{Item: item}}
		want := `StorageOSNamespace "old-team": invalid limbo.dev/deletionDelay "never": not a duration (Go syntax: 10m, 24h, 1h30m); never deleted until fixed`
		if p := h.engine.TombstonePending(ts); p.Message != want || p.DeleteAfter != nil {
			t.Errorf("TombstonePending = %+v, want message %q and no deadline", p, want)
		}
	})

	t.Run("cancel: finalizer removed first, then deleted with its UID; the item is not touched", func(t *testing.T) {
		ts := &limbov1alpha1.Tombstone{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: "uid-ts", Finalizers: []string{limbov1alpha1.FinalizerHardDelete},
				Labels: map[string]string{bundleKey: "shop", pendingKey: "true"}},
			Spec: limbov1alpha1.TombstoneSpec{Plugin: "namespace-gc", Resource: "storage-ns-gc", Item: item},
		}
		h := newHarness(t, ts)
		var live limbov1alpha1.Tombstone
		if err := h.client.Get(context.Background(), client.ObjectKeyFromObject(ts), &live); err != nil {
			t.Fatal(err)
		}
		if err := h.engine.CancelTombstone(context.Background(), bundle(), &live, "the item is desired again"); err != nil {
			t.Fatal(err)
		}
		want := []string{
			`PATCH Tombstone team-a/` + name + ` application/merge-patch+json {"metadata":{"finalizers":null,"resourceVersion":"999"}}`,
			"DELETE Tombstone team-a/" + name + " uid=uid-ts",
		}
		if !reflect.DeepEqual(h.calls, want) {
			t.Errorf("API calls:\n%q\nwant:\n%q", h.calls, want)
		}
		if err := h.client.Get(context.Background(), client.ObjectKeyFromObject(ts), &live); !apierrors.IsNotFound(err) {
			t.Errorf("Tombstone still there: %v", err)
		}
		if got, want := h.events(), []string{`Normal DeletionCancelled StorageOSNamespace "old-team": deletion cancelled (the item is desired again)`}; !reflect.DeepEqual(got, want) {
			t.Errorf("events %q, want %q", got, want)
		}
	})

	// A Tombstone whose external delete was tried (its answer lost, or its
	// success not recorded before a restart) is cancelled saying so: the item
	// may be gone, and the audit trail must not say only that it was kept.
	t.Run("cancel after delete attempts: the message says the item may be gone", func(t *testing.T) {
		last := metav1.NewTime(time.Date(2025, 3, 14, 12, 20, 0, 0, time.UTC))
		ts := &limbov1alpha1.Tombstone{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: "uid-ts", Finalizers: []string{limbov1alpha1.FinalizerHardDelete},
				Labels: map[string]string{bundleKey: "shop", pendingKey: "true"}},
			Spec:   limbov1alpha1.TombstoneSpec{Plugin: "namespace-gc", Resource: "storage-ns-gc", Item: item},
			Status: limbov1alpha1.TombstoneStatus{Attempts: 2, LastAttemptTime: &last},
		}
		h := newHarness(t, ts)
		if err := h.engine.CancelTombstone(context.Background(), bundle(), ts, "the Bundle is being deleted"); err != nil {
			t.Fatal(err)
		}
		want := []string{`Normal DeletionCancelled StorageOSNamespace "old-team": deletion cancelled (the Bundle is being deleted; 2 delete attempts were made, the last at 2025-03-14T12:20:00Z: the item may be gone already)`}
		if got := h.events(); !reflect.DeepEqual(got, want) {
			t.Errorf("events %q, want %q", got, want)
		}
	})

	// The Tombstone went the moment its finalizer did (it was being deleted), and
	// the Bundle's pass made a new one of the same name for the same item: the
	// cancel's delete, by name, must not force that one.
	t.Run("cancel whose Tombstone was replaced by one of the same name: the new one stays", func(t *testing.T) {
		successor := &limbov1alpha1.Tombstone{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: "uid-new", Finalizers: []string{limbov1alpha1.FinalizerHardDelete}},
			Spec:       limbov1alpha1.TombstoneSpec{Plugin: "namespace-gc", Resource: "storage-ns-gc", Item: item},
		}
		h := newHarness(t, successor)
		gone := &limbov1alpha1.Tombstone{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: "uid-old"},
			Spec: limbov1alpha1.TombstoneSpec{Item: item}}
		if err := h.engine.CancelTombstone(context.Background(), bundle(), gone, "refused"); err != nil {
			t.Fatalf("err = %v, want nil", err)
		}
		var live limbov1alpha1.Tombstone
		if err := h.client.Get(context.Background(), client.ObjectKeyFromObject(successor), &live); err != nil || live.UID != "uid-new" || live.DeletionTimestamp != nil {
			t.Errorf("the new Tombstone: %v, deletion %v (err %v); want it untouched", live.UID, live.DeletionTimestamp, err)
		}
	})

	// `kubectl delete tombstone` while its Bundle is gone: a forced delete the
	// Tombstone controller turns into a cancel. Its finalizer still holds it,
	// so it is no cancel made already: the finalizer goes, and with it the
	// Tombstone; kept, the Tombstone controller would delete the item after
	// all. One being deleted without its finalizer was cancelled already, and
	// is not announced again.
	t.Run("cancel of a Tombstone being deleted", func(t *testing.T) {
		for _, tc := range []struct {
			name       string
			finalizers []string
			wantCalls  []string
			wantEvents []string
			wantGone   bool
		}{
			{name: "still holding its finalizer (forced): the finalizer goes, and the Tombstone with it", finalizers: []string{limbov1alpha1.FinalizerHardDelete},
				wantCalls:  []string{`PATCH Tombstone team-a/` + name + ` application/merge-patch+json {"metadata":{"finalizers":null,"resourceVersion":"999"}}`},
				wantEvents: []string{`Normal DeletionCancelled StorageOSNamespace "old-team": deletion cancelled (its Bundle is gone)`},
				wantGone:   true},
			{name: "held by another controller's finalizer only: cancelled already, nothing written", finalizers: []string{"example.com/audit"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				ts := &limbov1alpha1.Tombstone{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: "uid-ts", Finalizers: tc.finalizers, DeletionTimestamp: mt(now.Add(-time.Minute)),
						Labels: map[string]string{bundleKey: "shop", pendingKey: "true"}},
					Spec: limbov1alpha1.TombstoneSpec{Plugin: "namespace-gc", Resource: "storage-ns-gc", Item: item},
				}
				h := newHarness(t, ts)
				var live limbov1alpha1.Tombstone
				if err := h.client.Get(context.Background(), client.ObjectKeyFromObject(ts), &live); err != nil {
					t.Fatal(err)
				}
				if err := h.engine.CancelTombstone(context.Background(), &live, &live, "its Bundle is gone"); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(h.calls, tc.wantCalls) {
					t.Errorf("API calls:\n%q\nwant:\n%q", h.calls, tc.wantCalls)
				}
				if got := h.events(); !reflect.DeepEqual(got, tc.wantEvents) {
					t.Errorf("events %q, want %q", got, tc.wantEvents)
				}
				err := h.client.Get(context.Background(), client.ObjectKeyFromObject(ts), &live)
				if gone := apierrors.IsNotFound(err); gone != tc.wantGone {
					t.Errorf("Tombstone gone: %v (err %v), want %v", gone, err, tc.wantGone)
				}
			})
		}
	})

	t.Run("cancel of a Tombstone already gone: success", func(t *testing.T) {
		h := newHarness(t)
		ts := &limbov1alpha1.Tombstone{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "5", Finalizers: []string{limbov1alpha1.FinalizerHardDelete}},
			Spec: limbov1alpha1.TombstoneSpec{Item: item}}
		if err := h.engine.CancelTombstone(context.Background(), bundle(), ts, "the Bundle is being deleted"); err != nil {
			t.Errorf("err = %v, want nil", err)
		}
	})
}

// An object gone by the time its countdown is cancelled has none left to cancel:
// no error and no event, whether it is desired again (Desired) or a teardown
// cancels it (CancelCountdown), which share one implementation. Before, Desired
// reported the NotFound as an error (the resource ApplyFailed until the next pass).
func TestEngineCancelOfAnObjectGone(t *testing.T) {
	inLimbo := map[string]string{delayKey: "1h", stampKey: "2025-03-14T12:00:00Z"}
	for _, tc := range []struct {
		name   string
		cancel func(h *harness, obj *unstructured.Unstructured) (bool, error)
	}{
		{"desired again", func(h *harness, obj *unstructured.Unstructured) (bool, error) {
			return h.engine.Desired(context.Background(), bundle(), obj)
		}},
		{"a teardown with --cascade=orphan", func(h *harness, obj *unstructured.Unstructured) (bool, error) {
			return false, h.engine.CancelCountdown(context.Background(), bundle(), obj, "the Bundle was deleted with --cascade=orphan")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, cm("db", inLimbo, map[string]string{pendingKey: "true"}))
			obj := h.live(t, "db")
			if err := h.client.Delete(context.Background(), obj.DeepCopy()); err != nil {
				t.Fatal(err)
			}
			h.calls = nil
			if cancelled, err := tc.cancel(h, obj); cancelled || err != nil {
				t.Errorf("cancelled/err = %v/%v, want false/nil", cancelled, err)
			}
			if got := h.events(); len(got) != 0 {
				t.Errorf("events %q for an object gone", got)
			}
		})
	}
}

// A Tombstone whose stamp is unparsable (or gone) is stamped again as any
// orphan is (one implementation): on the Tombstone as read, with the label, a
// Warning and then DeletionScheduled on the Tombstone, and a "stamped" line of
// the audit trail. Before, the Tombstone controller wrote the stamp itself: a
// Warning without the item's name, and neither DeletionScheduled nor an audit line.
func TestEngineStampTombstone(t *testing.T) {
	item := limbov1alpha1.ExternalItem{Kind: "StorageOSNamespace", ID: "4f7c", Name: "old-team"}
	for _, tc := range []struct {
		name         string
		stale        bool
		wantConflict bool
		wantEvents   []string
		wantStamp    string
	}{
		{name: "restamped", wantEvents: []string{
			`Warning InvalidDeletionTimestamp StorageOSNamespace "old-team": invalid limbo.dev/deletionTimestamp "yesterday": not an RFC 3339 time; the countdown restarts`,
			`Normal DeletionScheduled StorageOSNamespace "old-team" is in limbo for 10m0s: deleted at 2025-03-14T12:40:45Z`,
		}, wantStamp: "2025-03-14T12:30:45Z"},
		{name: "changed since it was read: read and decide again", stale: true, wantConflict: true, wantEvents: []string{
			`Warning InvalidDeletionTimestamp StorageOSNamespace "old-team": invalid limbo.dev/deletionTimestamp "yesterday": not an RFC 3339 time; the countdown restarts`,
		}, wantStamp: "yesterday"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, &limbov1alpha1.Tombstone{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop-ns-gc-1", UID: "uid-ts", Finalizers: []string{limbov1alpha1.FinalizerHardDelete},
					Labels:      map[string]string{bundleKey: "shop", pendingKey: "true"},
					Annotations: map[string]string{delayKey: "10m", stampKey: "yesterday"}},
				Spec: limbov1alpha1.TombstoneSpec{Plugin: "namespace-gc", Resource: "ns-gc", Item: item},
			})
			var ts limbov1alpha1.Tombstone
			if err := h.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "shop-ns-gc-1"}, &ts); err != nil {
				t.Fatal(err)
			}
			if tc.stale {
				ts.ResourceVersion = "998"
			}
			want := []string{`PATCH Tombstone team-a/shop-ns-gc-1 application/merge-patch+json {"metadata":{"annotations":{"limbo.dev/deletionTimestamp":"2025-03-14T12:30:45Z"},"labels":{"limbo.dev/pending-deletion":"true"},"resourceVersion":"` + ts.ResourceVersion + `"}}`}
			d := softdelete.Decide(now, softdelete.StateOf(&ts, false))
			conflict, err := h.engine.StampTombstone(context.Background(), &ts, d)
			if err != nil || conflict != tc.wantConflict {
				t.Fatalf("conflict/err = %v/%v, want %v/nil", conflict, err, tc.wantConflict)
			}
			if !reflect.DeepEqual(h.calls, want) {
				t.Errorf("API calls:\n%q\nwant:\n%q", h.calls, want)
			}
			if got := h.events(); !reflect.DeepEqual(got, tc.wantEvents) {
				t.Errorf("events:\n%q\nwant:\n%q", got, tc.wantEvents)
			}
			var live limbov1alpha1.Tombstone
			if err := h.client.Get(context.Background(), client.ObjectKeyFromObject(&ts), &live); err != nil || live.Annotations[stampKey] != tc.wantStamp {
				t.Errorf("stamp %q (err %v), want %q", live.Annotations[stampKey], err, tc.wantStamp)
			}
		})
	}
}

// RemoveTombstone is the one removal of a Tombstone, for a cancel and for the
// Tombstone controller once the item is deleted: the finalizer goes first,
// guarded by the resourceVersion, then the Tombstone is deleted by UID unless it
// is being deleted already. A copy read before a Tombstone of the same name
// replaced it never touches that one. Before, the controller's removal was
// unguarded (a stale copy took a successor's finalizer, and its item was never
// deleted) and reported a successor's UID Conflict as an error, and a cancel
// deleted a Tombstone already being deleted once more.
func TestRemoveTombstone(t *testing.T) {
	const name = "shop-ns-gc-1"
	tombstone := func(uid types.UID, finalizers []string, deleted bool) *limbov1alpha1.Tombstone {
		ts := &limbov1alpha1.Tombstone{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid, Finalizers: finalizers,
			Labels: map[string]string{bundleKey: "shop", pendingKey: "true"}}}
		if deleted {
			ts.DeletionTimestamp = mt(now)
		}
		return ts
	}
	hardDelete := []string{limbov1alpha1.FinalizerHardDelete}
	finalizerPatch := func(rv string) string {
		return `PATCH Tombstone team-a/` + name + ` application/merge-patch+json {"metadata":{"finalizers":null,"resourceVersion":"` + rv + `"}}`
	}
	for _, tc := range []struct {
		name      string
		stored    *limbov1alpha1.Tombstone // nil: none
		read      *limbov1alpha1.Tombstone // the caller's copy; nil: the stored one, as read
		wantCalls []string
		wantErr   func(error) bool
		wantLive  string // the UID left under the name; "" for none
	}{
		{name: "its finalizer, then itself by UID", stored: tombstone("uid-ts", hardDelete, false),
			wantCalls: []string{finalizerPatch("999"), "DELETE Tombstone team-a/" + name + " uid=uid-ts"}},
		{name: "being deleted: its finalizer only, and it is gone", stored: tombstone("uid-ts", hardDelete, true),
			wantCalls: []string{finalizerPatch("999")}},
		{name: "no finalizer left (a failed delete): itself", stored: tombstone("uid-ts", nil, false),
			wantCalls: []string{"DELETE Tombstone team-a/" + name + " uid=uid-ts"}},
		{name: "a stale copy with the finalizer, replaced by one of the same name: a Conflict, the new one untouched",
			stored: tombstone("uid-new", hardDelete, false), read: func() *limbov1alpha1.Tombstone {
				ts := tombstone("uid-old", hardDelete, false)
				ts.ResourceVersion = "5"
				return ts
			}(),
			wantCalls: []string{finalizerPatch("5")}, wantErr: apierrors.IsConflict, wantLive: "uid-new"},
		{name: "a copy without the finalizer, replaced by one of the same name: success, the new one untouched",
			stored: tombstone("uid-new", hardDelete, false), read: tombstone("uid-old", nil, false),
			wantCalls: []string{"DELETE Tombstone team-a/" + name + " uid=uid-old"}, wantLive: "uid-new"},
		{name: "a copy without the finalizer, gone before: NotFound (a cancel announces nothing)", read: tombstone("uid-ts", nil, false),
			wantCalls: []string{"DELETE Tombstone team-a/" + name + " uid=uid-ts"}, wantErr: apierrors.IsNotFound},
		{name: "gone before: NotFound", read: func() *limbov1alpha1.Tombstone {
			ts := tombstone("uid-ts", hardDelete, false)
			ts.ResourceVersion = "5"
			return ts
		}(), wantCalls: []string{finalizerPatch("5")}, wantErr: apierrors.IsNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h *harness
			if tc.stored != nil {
				h = newHarness(t, tc.stored)
			} else {
				h = newHarness(t)
			}
			ts := tc.read
			if ts == nil {
				ts = &limbov1alpha1.Tombstone{}
				if err := h.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, ts); err != nil {
					t.Fatal(err)
				}
			}
			err := softdelete.RemoveTombstone(context.Background(), h.client, ts)
			switch {
			case tc.wantErr == nil && err != nil:
				t.Errorf("err = %v, want nil", err)
			case tc.wantErr != nil && !tc.wantErr(unwrapAll(err)):
				t.Errorf("err = %v", err)
			}
			if !reflect.DeepEqual(h.calls, tc.wantCalls) {
				t.Errorf("API calls:\n%q\nwant:\n%q", h.calls, tc.wantCalls)
			}
			var live limbov1alpha1.Tombstone
			getErr := h.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &live)
			switch {
			case tc.wantLive == "" && !apierrors.IsNotFound(getErr):
				t.Errorf("a Tombstone is left: %v (err %v)", live.UID, getErr)
			case tc.wantLive != "" && (getErr != nil || live.UID != types.UID(tc.wantLive) || live.DeletionTimestamp != nil || len(live.Finalizers) != 1):
				t.Errorf("the Tombstone left: %v, deletion %v, finalizers %v (err %v); want %s untouched", live.UID, live.DeletionTimestamp, live.Finalizers, getErr, tc.wantLive)
			}
		})
	}
}

// An orphan deleted by hand before a pass stamped it, held by a finalizer, is
// listed as being deleted without a countdown: none ran, and an invented one
// (its deletionTimestamp plus the delay) became the Bundle's NEXT-DELETION. A
// stamped one keeps its own. Nor is it written to or announced: it goes
// whatever its delay says, and a stamp now, with its DeletionScheduled, would
// name a deadline that nothing keeps.
func TestTerminatingEntryShowsOnlyARealCountdown(t *testing.T) {
	for _, tc := range []struct {
		name  string
		delay string // "" for 24h
		stamp string
		want  *limbov1alpha1.PendingDeletion
	}{
		// Being deleted, it goes whatever its delay says: what holds it is the news.
		{name: "an invalid delay", delay: "never", want: &limbov1alpha1.PendingDeletion{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: "ns", Name: "db",
			Message: "being deleted; held by finalizers: kubernetes.io/pvc-protection"}},
		{name: "never stamped", want: &limbov1alpha1.PendingDeletion{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: "ns", Name: "db",
			Message: "being deleted; held by finalizers: kubernetes.io/pvc-protection"}},
		{name: "stamped", stamp: "2025-03-14T12:00:00Z", want: &limbov1alpha1.PendingDeletion{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: "ns", Name: "db",
			DeletionTimestamp: mt(at("2025-03-14T12:00:00Z")), DeleteAfter: mt(at("2025-03-15T12:00:00Z")),
			Message: "being deleted; held by finalizers: kubernetes.io/pvc-protection"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db",
				Annotations:       map[string]string{delayKey: cmp.Or(tc.delay, "24h")},
				DeletionTimestamp: mt(now.Add(-time.Minute)), Finalizers: []string{"kubernetes.io/pvc-protection"}}}
			if tc.stamp != "" {
				pvc.Annotations[stampKey] = tc.stamp
			}
			h := newHarness(t, pvc)
			live := &corev1.PersistentVolumeClaim{}
			if err := h.client.Get(context.Background(), client.ObjectKeyFromObject(pvc), live); err != nil {
				t.Fatal(err)
			}
			live.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"))
			out := h.engine.Orphan(context.Background(), bundle(), live, nil)
			if !pendingEqual(out.Pending, tc.want) {
				t.Errorf("Pending = %+v, want %+v", out.Pending, tc.want)
			}
			if len(h.calls) != 0 {
				t.Errorf("API calls %q, want none: it is being deleted", h.calls)
			}
			if ev := h.events(); len(ev) != 0 {
				t.Errorf("events %q, want none", ev)
			}
		})
	}
}
