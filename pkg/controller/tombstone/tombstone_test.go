package tombstone

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
	"github.com/limbo-dev/limbo/pkg/impersonation"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// The retry delay after the n-th failed delete doubles from 1s and stops at 5
// minutes, whatever the count.
func TestRetryBackoff(t *testing.T) {
	for _, tc := range []struct {
		attempts int32
		want     time.Duration
	}{
		{0, time.Second}, // never asked: no attempt fails before the first
		{1, time.Second},
		{2, 2 * time.Second},
		{3, 4 * time.Second},
		{9, 256 * time.Second},
		{10, 5 * time.Minute}, // 512s, capped
		{21, 5 * time.Minute},
		{22, 5 * time.Minute}, // past the shift limit
		{math.MaxInt32, 5 * time.Minute},
	} {
		if got := retryBackoff(tc.attempts); got != tc.want {
			t.Errorf("retryBackoff(%d) = %v, want %v", tc.attempts, got, tc.want)
		}
	}
}

// The wait before the next delete is read from status: the backoff of the last
// failed attempt, counted from when it was marked; none before any failure, and
// none for a Tombstone forced (deleted) after its last attempt.
func TestBackoffLeft(t *testing.T) {
	at := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		status  limbov1alpha1.TombstoneStatus
		deleted *metav1.Time
		now     time.Time
		want    time.Duration
	}{
		{"never tried", limbov1alpha1.TombstoneStatus{}, nil, at, 0},
		{"first attempt running", limbov1alpha1.TombstoneStatus{Attempts: 1, LastAttemptTime: &metav1.Time{Time: at}}, nil, at, 0},
		{"an error without an attempt time (written before the field existed)", limbov1alpha1.TombstoneStatus{Attempts: 3, LastError: "503"}, nil, at, 0},
		{"half a second after the first failure", limbov1alpha1.TombstoneStatus{Attempts: 1, LastError: "503", LastAttemptTime: &metav1.Time{Time: at}}, nil, at.Add(500 * time.Millisecond), 500 * time.Millisecond},
		{"a second after the third", limbov1alpha1.TombstoneStatus{Attempts: 3, LastError: "503", LastAttemptTime: &metav1.Time{Time: at}}, nil, at.Add(time.Second), 3 * time.Second},
		{"the backoff is over", limbov1alpha1.TombstoneStatus{Attempts: 3, LastError: "503", LastAttemptTime: &metav1.Time{Time: at}}, nil, at.Add(time.Hour), 0},
		{"capped", limbov1alpha1.TombstoneStatus{Attempts: 30, LastError: "503", LastAttemptTime: &metav1.Time{Time: at}}, nil, at, 5 * time.Minute},
		{"forced after the last attempt", limbov1alpha1.TombstoneStatus{Attempts: 3, LastError: "503", LastAttemptTime: &metav1.Time{Time: at}}, &metav1.Time{Time: at.Add(time.Second)}, at.Add(time.Second), 0},
		{"forced, and that attempt failed", limbov1alpha1.TombstoneStatus{Attempts: 3, LastError: "503", LastAttemptTime: &metav1.Time{Time: at}}, &metav1.Time{Time: at.Add(-time.Second)}, at.Add(time.Second), 3 * time.Second},
		// The two are whole seconds once stored: the force, a moment after the
		// attempt, waited out the backoff.
		{"forced in the second of the last attempt", limbov1alpha1.TombstoneStatus{Attempts: 9, LastError: "503", LastAttemptTime: &metav1.Time{Time: at}}, &metav1.Time{Time: at}, at.Add(time.Second), 0},
		{"forced in the second of the last attempt, not yet stored", limbov1alpha1.TombstoneStatus{Attempts: 9, LastError: "503", LastAttemptTime: &metav1.Time{Time: at.Add(300 * time.Millisecond)}}, &metav1.Time{Time: at}, at.Add(time.Second), 0},
		// The forced attempt is marked a second past the force (attemptTime).
		{"the forced attempt failed", limbov1alpha1.TombstoneStatus{Attempts: 9, LastError: "503", LastAttemptTime: &metav1.Time{Time: at.Add(time.Second)}}, &metav1.Time{Time: at}, at.Add(time.Second), 256 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := &limbov1alpha1.Tombstone{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: tc.deleted}, Status: tc.status}
			if got := backoffLeft(tc.now, ts); got != tc.want {
				t.Errorf("backoffLeft = %v, want %v", got, tc.want)
			}
		})
	}
}

// An attempt on a Tombstone being deleted (forced) is marked at least a second
// past the force, in whole seconds, whatever the controller's clock says: its
// failure then backs off (backoffLeft), where a mark in the force's second, or
// before it on a controller clock behind the API server's, tried again at once,
// for as long as the clocks disagreed.
func TestAttemptTime(t *testing.T) {
	at := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		deleted *metav1.Time
		now     time.Time
		want    time.Time
	}{
		{"not forced", nil, at.Add(300 * time.Millisecond), at.Add(300 * time.Millisecond)},
		{"forced in the same second", &metav1.Time{Time: at}, at.Add(300 * time.Millisecond), at.Add(time.Second)},
		{"forced, the controller's clock behind", &metav1.Time{Time: at}, at.Add(-700 * time.Millisecond), at.Add(time.Second)},
		{"forced long before", &metav1.Time{Time: at}, at.Add(time.Minute), at.Add(time.Minute)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := &limbov1alpha1.Tombstone{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: tc.deleted}}
			got := attemptTime(tc.now, ts)
			if !got.Equal(tc.want) {
				t.Errorf("attemptTime = %v, want %v", got, tc.want)
			}
			if tc.deleted == nil {
				return
			}
			// Stored, and failed: the next check backs off.
			ts.Status = limbov1alpha1.TombstoneStatus{Attempts: 1, LastError: "503", LastAttemptTime: &metav1.Time{Time: got.Truncate(time.Second)}}
			if left := backoffLeft(got, ts); left == 0 {
				t.Errorf("after the forced attempt failed: backoffLeft = 0, want its backoff")
			}
		})
	}
}

// flaky is an external-delete plugin whose first failures deletes fail. While
// gate is set, each delete waits for it (or for its context to end).
type flaky struct {
	failures int
	message  string // of the failures; "": a 503's
	err      error  // of the failures, when set
	calls    atomic.Int32
	gate     chan struct{}

	mu sync.Mutex
	// client and user are the last delete's Request.Client and the user its
	// context impersonates ("": none).
	client client.Client
	user   string
}

func (f *flaky) Describe() plugin.Description { return plugin.Description{Name: "flaky"} }
func (f *flaky) Plan(context.Context, plugin.Request) (*plugin.Result, error) {
	return &plugin.Result{Ready: true}, nil
}
func (f *flaky) DeleteExternal(ctx context.Context, req plugin.Request, _ limbov1alpha1.ExternalItem) error {
	n := f.calls.Add(1)
	f.mu.Lock()
	f.client = req.Client
	f.user, _ = impersonation.UserFrom(ctx)
	f.mu.Unlock()
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if int(n) <= f.failures {
		if f.err != nil {
			return f.err
		}
		if f.message != "" {
			return errors.New(f.message)
		}
		return errors.New("injected: 503 Service Unavailable")
	}
	return nil
}

// A Tombstone whose item's deletes fail is retried on the backoff schedule, on
// a fake clock: the countdown first, then after each failure the next attempt
// after 1s, 2s, 4s, ... (capped), each attempt counted in status.attempts, its
// error in status.lastError and an event; the attempt that succeeds removes the
// Tombstone, and the deletion is recorded late by the sum of the backoffs.
func TestReconcileRetrySchedule(t *testing.T) {
	schedule := []time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second,
		32 * time.Second, 64 * time.Second, 128 * time.Second, 256 * time.Second, 5 * time.Minute, 5 * time.Minute}
	for _, tc := range []struct {
		name     string
		failures int
	}{
		{"first attempt succeeds", 0},
		{"one failure", 1},
		{"three failures", 3},
		{"failures past the cap", len(schedule)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.failures)
			const delay = time.Minute

			// The countdown: no attempt before the deadline.
			if res := h.reconcile(); res.RequeueAfter != delay {
				t.Fatalf("before the deadline: requeue after %v, want %v", res.RequeueAfter, delay)
			}
			if h.plugin.calls.Load() != 0 {
				t.Fatalf("%d deletes before the deadline", h.plugin.calls.Load())
			}
			h.clock.Step(delay)

			var late time.Duration
			for i := 1; i <= tc.failures; i++ {
				res := h.reconcile()
				ts := h.tombstone()
				if ts == nil {
					t.Fatalf("attempt %d failed but the Tombstone is gone", i)
				}
				if int(h.plugin.calls.Load()) != i || ts.Status.Attempts != int32(i) {
					t.Fatalf("after failure %d: %d deletes, status.attempts %d", i, h.plugin.calls.Load(), ts.Status.Attempts)
				}
				if !strings.Contains(ts.Status.LastError, "503") {
					t.Errorf("after failure %d: status.lastError = %q", i, ts.Status.LastError)
				}
				if want := schedule[i-1]; res.RequeueAfter != want {
					t.Errorf("after failure %d: retry after %v, want %v", i, res.RequeueAfter, want)
				}
				if e := h.event(); !strings.Contains(e, limbov1alpha1.EventDeleteFailed) {
					t.Errorf("after failure %d: event %q, want %s", i, e, limbov1alpha1.EventDeleteFailed)
				}
				// Another trigger meanwhile (a restarted controller, an
				// annotation edited) waits out the rest of the backoff.
				h.clock.Step(res.RequeueAfter / 2)
				if early := h.reconcile(); int(h.plugin.calls.Load()) != i || early.RequeueAfter != res.RequeueAfter-res.RequeueAfter/2 {
					t.Errorf("halfway through backoff %d: %d deletes (want %d), requeue after %v (want %v)",
						i, h.plugin.calls.Load(), i, early.RequeueAfter, res.RequeueAfter-res.RequeueAfter/2)
				}
				h.clock.Step(res.RequeueAfter - res.RequeueAfter/2)
				late += res.RequeueAfter
			}

			if res := h.reconcile(); res != (ctrl.Result{}) {
				t.Errorf("the successful attempt asks to requeue: %+v", res)
			}
			if int(h.plugin.calls.Load()) != tc.failures+1 {
				t.Errorf("%d deletes, want %d", h.plugin.calls.Load(), tc.failures+1)
			}
			if ts := h.tombstone(); ts != nil {
				t.Errorf("the Tombstone is still there after its item was deleted (finalizers %v)", ts.Finalizers)
			}
			if got := h.sample("limbo_deletions_total", softdelete.ResultFailed).GetCounter().GetValue(); got != float64(tc.failures) {
				t.Errorf(`limbo_deletions_total{result="failed"} = %v, want %d`, got, tc.failures)
			}
			if got := h.sample("limbo_deletions_total", softdelete.ResultDeleted).GetCounter().GetValue(); got != 1 {
				t.Errorf(`limbo_deletions_total{result="deleted"} = %v, want 1`, got)
			}
			lateness := h.sample("limbo_deletion_lateness_seconds", "").GetHistogram()
			if lateness.GetSampleCount() != 1 || lateness.GetSampleSum() != late.Seconds() {
				t.Errorf("lateness: %d samples summing to %vs, want one of the backoffs' sum %vs", lateness.GetSampleCount(), lateness.GetSampleSum(), late.Seconds())
			}
		})
	}
}

// A failed delete's error goes into status.lastError and its event bounded
// (bundlespec.Bound): it can carry what an endpoint of the Bundle author's own
// answered (64 KiB of an error body), and a Bundle's status lists every
// Tombstone's — hundreds of them made its status writes too large to accept.
func TestReconcileBoundsLastError(t *testing.T) {
	h := newHarness(t, 1)
	h.plugin.message = "injected: 500 Internal Server Error: " + strings.Repeat("x", 64<<10)
	h.reconcile()
	h.clock.Step(time.Minute)
	h.reconcile()
	ts := h.tombstone()
	if ts == nil || ts.Status.Attempts != 1 {
		t.Fatalf("the failed attempt is not recorded: %+v", ts)
	}
	if n := len(ts.Status.LastError); n > bundlespec.MessageBudget || !strings.HasPrefix(ts.Status.LastError, "injected: 500 Internal Server Error: xxx") {
		t.Errorf("status.lastError is %d bytes (%.60q…), want the error's start within %d", n, ts.Status.LastError, bundlespec.MessageBudget)
	}
	switch e := h.event(); {
	case !strings.Contains(e, limbov1alpha1.EventDeleteFailed+" "):
		t.Errorf("event %.80q, want a %s event", e, limbov1alpha1.EventDeleteFailed)
	case len(e) > bundlespec.MessageBudget+512:
		t.Errorf("the %s event is %d bytes long", limbov1alpha1.EventDeleteFailed, len(e))
	}
}

type harness struct {
	t        *testing.T
	client   client.Client
	clock    *clocktesting.FakeClock
	plugin   *flaky
	recorder *record.FakeRecorder
	registry *prometheus.Registry
	r        *Reconciler
	// done receives the Tombstones the reconciler triggers.
	done chan event.GenericEvent
	key  client.ObjectKey
}

// A write that lets the Tombstone go after its item was deleted (the
// finalizer's removal, the Tombstone's delete) that fails is done again by the
// next reconcile, and the item is not deleted twice.
func TestReconcileLetsGoAfterAFailedWrite(t *testing.T) {
	failOnce := func(calls *atomic.Int32) error {
		if calls.Add(1) == 1 {
			return errors.New("injected: 500 Internal Server Error")
		}
		return nil
	}
	for _, tc := range []struct {
		name  string
		funcs func(calls *atomic.Int32) interceptor.Funcs
	}{
		{"the finalizer's removal fails once", func(calls *atomic.Int32) interceptor.Funcs {
			return interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				if err := failOnce(calls); err != nil {
					return err
				}
				return c.Patch(ctx, obj, patch, opts...)
			}}
		}},
		{"the Tombstone's delete fails once", func(calls *atomic.Int32) interceptor.Funcs {
			return interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				if err := failOnce(calls); err != nil {
					return err
				}
				return c.Delete(ctx, obj, opts...)
			}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			h := newHarnessIntercepted(t, 0, tc.funcs(&calls))
			h.reconcile() // the countdown
			h.clock.Step(time.Minute)
			if _, err := h.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: h.key}); err == nil {
				t.Fatal("the reconcile whose write failed reports no error: nothing would retry it")
			}
			for range 2 {
				if h.tombstone() == nil {
					break
				}
				h.reconcile()
			}
			if ts := h.tombstone(); ts != nil {
				t.Errorf("the Tombstone is still there (finalizers %v)", ts.Finalizers)
			}
			if n := h.plugin.calls.Load(); n != 1 {
				t.Errorf("the item was deleted %d times, want once", n)
			}
		})
	}
}

// newHarness holds a Bundle team/shop with the plugin resource items, and its
// Tombstone of one item, stamped now with a one-minute delay, whose deletes fail
// failures times.
func newHarness(t *testing.T, failures int) *harness {
	t.Helper()
	return newHarnessIntercepted(t, failures, interceptor.Funcs{})
}

// newHarnessIntercepted is newHarness with funcs intercepting the client's calls.
func newHarnessIntercepted(t *testing.T, failures int, funcs interceptor.Funcs) *harness {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := limbov1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}
	b := &limbov1alpha1.Bundle{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "shop", UID: types.UID("bundle-uid")},
		Spec:       limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{{Name: "items", Plugin: &limbov1alpha1.PluginResource{Name: "flaky"}}}},
	}
	ts := &limbov1alpha1.Tombstone{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "team", Name: "shop-items-42", UID: types.UID("tombstone-uid"),
			Labels: map[string]string{limbov1alpha1.LabelBundle: "shop", limbov1alpha1.LabelPendingDeletion: "true"},
			Annotations: map[string]string{
				limbov1alpha1.AnnotationDeletionTimestamp: softdelete.FormatStamp(now),
				limbov1alpha1.AnnotationDeletionDelay:     "1m",
			},
			Finalizers: []string{limbov1alpha1.FinalizerHardDelete},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: limbov1alpha1.GroupVersion.String(), Kind: "Bundle",
				Name: "shop", UID: b.UID, Controller: ptr.To(true)}},
		},
		Spec: limbov1alpha1.TombstoneSpec{Plugin: "flaky", Resource: "items", Item: limbov1alpha1.ExternalItem{Kind: "Thing", ID: "42"}},
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(namespace, b, ts).WithStatusSubresource(&limbov1alpha1.Tombstone{}).WithInterceptorFuncs(funcs).Build()
	p := &flaky{failures: failures}
	plugins, err := plugin.NewRegistry(p)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, client: c, clock: clocktesting.NewFakeClock(now), plugin: p, recorder: record.NewFakeRecorder(100),
		registry: prometheus.NewRegistry(), key: client.ObjectKeyFromObject(ts)}
	engine := &softdelete.Engine{Client: c, Reader: c, Recorder: h.recorder, Clock: h.clock, Metrics: softdelete.NewMetrics(h.registry)}
	h.done = make(chan event.GenericEvent, 10)
	h.r = NewReconciler(c, c, plugins, engine, h.done, 1)
	return h
}

func (h *harness) reconcile() ctrl.Result {
	h.t.Helper()
	res, err := h.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: h.key})
	if err != nil {
		h.t.Fatalf("Reconcile: %v", err)
	}
	return res
}

// tombstone reads the Tombstone; nil when it is gone.
func (h *harness) tombstone() *limbov1alpha1.Tombstone {
	h.t.Helper()
	var ts limbov1alpha1.Tombstone
	err := h.client.Get(context.Background(), h.key, &ts)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		h.t.Fatal(err)
	}
	return &ts
}

// event is the next event recorded, "" when there is none.
func (h *harness) event() string {
	select {
	case e := <-h.recorder.Events:
		return e
	default:
		return ""
	}
}

// sample is the sample of metric name in the harness's registry whose first
// label has value label ("" for an unlabelled metric); nil when there is none.
func (h *harness) sample(name, label string) *dto.Metric {
	h.t.Helper()
	families, err := h.registry.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if label == "" || (len(m.GetLabel()) > 0 && m.GetLabel()[0].GetValue() == label) {
				return m
			}
		}
	}
	return nil
}

// A Tombstone whose stamp is unparsable is stamped again by the engine, as any
// orphan (softdelete.Engine.StampTombstone): a Warning and DeletionScheduled on
// the Tombstone, and the countdown runs from now. Before, the controller wrote
// the stamp itself and announced no DeletionScheduled.
func TestReconcileRestamps(t *testing.T) {
	h := newHarness(t, 0)
	ctx := context.Background()
	ts := h.tombstone()
	ts.Annotations[limbov1alpha1.AnnotationDeletionTimestamp] = "yesterday"
	if err := h.client.Update(ctx, ts); err != nil {
		t.Fatal(err)
	}
	if res := h.reconcile(); res != (ctrl.Result{}) {
		t.Errorf("the stamp's reconcile: %+v, want none (its write brings the next)", res)
	}
	for _, want := range []string{
		`Warning InvalidDeletionTimestamp Thing "42": invalid limbo.dev/deletionTimestamp "yesterday"`,
		`Normal DeletionScheduled Thing "42" is in limbo for 1m0s: deleted at 2026-03-14T12:01:00Z`,
	} {
		if e := h.event(); !strings.HasPrefix(e, want) {
			t.Errorf("event %q, want %q", e, want)
		}
	}
	if got := h.tombstone().Annotations[limbov1alpha1.AnnotationDeletionTimestamp]; got != "2026-03-14T12:00:00Z" {
		t.Errorf("stamp %q", got)
	}
	if res := h.reconcile(); res.RequeueAfter != time.Minute || h.plugin.calls.Load() != 0 {
		t.Errorf("after the stamp: %+v, %d deletes; want to wait a minute", res, h.plugin.calls.Load())
	}
}

// firstPatchConflicts answers the first PATCH with a Conflict, as the API server
// does when the Tombstone changed since it was read, and lets the rest through.
func firstPatchConflicts() interceptor.Funcs {
	var patches atomic.Int32
	return interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
		if patches.Add(1) == 1 {
			return apierrors.NewConflict(limbov1alpha1.GroupVersion.WithResource("tombstones").GroupResource(), obj.GetName(), errors.New("the object has been modified"))
		}
		return c.Patch(ctx, obj, patch, opts...)
	}}
}

// A stamp that meets a Conflict (the Tombstone changed since it was read) is
// read and decided again soon: without a written stamp, no change of the
// Tombstone brings the next reconcile.
func TestReconcileStampConflictIsReadAgain(t *testing.T) {
	h := newHarnessIntercepted(t, 0, firstPatchConflicts())
	ts := h.tombstone()
	ts.Annotations[limbov1alpha1.AnnotationDeletionTimestamp] = "yesterday"
	if err := h.client.Update(context.Background(), ts); err != nil {
		t.Fatal(err)
	}
	if res := h.reconcile(); res.RequeueAfter != conflictRetry {
		t.Errorf("after the Conflict: %+v, want a retry after %v", res, conflictRetry)
	}
	h.reconcile()
	if got := h.tombstone().Annotations[limbov1alpha1.AnnotationDeletionTimestamp]; got != "2026-03-14T12:00:00Z" {
		t.Errorf("stamp %q after the retry, want now's", got)
	}
}

// A Conflict on the removal of a Tombstone whose item was deleted (it changed
// since it was read) is read and decide again, soon, not an error; the item is
// deleted once. Before, the finalizer's removal was not guarded, and a Tombstone
// of the same name made since was stripped of its finalizer.
func TestReconcileRemovalConflictIsReadAgain(t *testing.T) {
	h := newHarnessIntercepted(t, 0, firstPatchConflicts())
	h.reconcile() // the countdown
	h.clock.Step(time.Minute)
	if res := h.reconcile(); res.RequeueAfter != conflictRetry {
		t.Errorf("after the Conflict: %+v, want a retry after %v", res, conflictRetry)
	}
	h.reconcile()
	if ts := h.tombstone(); ts != nil {
		t.Errorf("the Tombstone is still there (finalizers %v)", ts.Finalizers)
	}
	if n := h.plugin.calls.Load(); n != 1 {
		t.Errorf("the item was deleted %d times, want once", n)
	}
}

// status.deleteAfter (kubectl get tombstones' DELETE-AFTER, and the
// limbo_tombstone_delete_after_timestamp_seconds gauge) follows the deadline
// when it comes early: expedited (or its delay lowered), a Tombstone whose
// delete fails and is retried no longer shows the old deadline, a day ahead.
func TestDeleteAfterFollowsAnExpedite(t *testing.T) {
	h := newHarness(t, 5)
	ctx := context.Background()
	h.r.Clock = h.clock
	ts := h.tombstone()
	ts.Annotations[limbov1alpha1.AnnotationDeletionDelay] = "24h"
	if err := h.client.Update(ctx, ts); err != nil {
		t.Fatal(err)
	}
	h.reconcile()
	if got := h.tombstone().Status.DeleteAfter; got == nil || !got.Time.Equal(h.clock.Now().Add(24*time.Hour)) {
		t.Fatalf("deleteAfter = %v", got)
	}
	h.clock.Step(time.Minute)
	ts = h.tombstone()
	ts.Annotations[limbov1alpha1.AnnotationDeletionTimestamp] = softdelete.ExpediteStamp(h.clock.Now(), 24*time.Hour)
	if err := h.client.Update(ctx, ts); err != nil {
		t.Fatal(err)
	}
	h.reconcile() // due: the delete is tried, and fails
	got := h.tombstone()
	if got.Status.Attempts != 1 {
		t.Fatalf("attempts = %d", got.Status.Attempts)
	}
	if got.Status.DeleteAfter == nil || got.Status.DeleteAfter.After(h.clock.Now()) {
		t.Errorf("status.deleteAfter = %v after the expedite (now %v), want the deadline that has come", got.Status.DeleteAfter, h.clock.Now())
	}
}

// A reconcile on a cached copy from before the controller's own status write
// (the cache behind) starts from the status written, not the stale one: it
// does not write the same status again.
func TestReconcileStaleCacheWritesNoStatusAgain(t *testing.T) {
	var statusPatches atomic.Int32
	h := newHarnessIntercepted(t, 0, interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, subResource string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
		statusPatches.Add(1)
		return c.SubResource(subResource).Patch(ctx, obj, patch, opts...)
	}})
	stale := h.tombstone() // before the countdown's status write
	h.reconcile()          // the countdown: status.deleteAfter written
	if n := statusPatches.Load(); n != 1 {
		t.Fatalf("%d status writes for the countdown, want 1", n)
	}
	h.r.Client = interceptor.NewClient(h.client.(client.WithWatch), interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if ts, ok := obj.(*limbov1alpha1.Tombstone); ok {
			stale.DeepCopyInto(ts)
			return nil
		}
		return c.Get(ctx, key, obj, opts...)
	}})
	if res := h.reconcile(); res.RequeueAfter != time.Minute {
		t.Errorf("Reconcile = %+v, want the countdown", res)
	}
	if n := statusPatches.Load(); n != 1 {
		t.Errorf("%d status writes, want 1: the stale copy's status was written again", n)
	}
}

// A Tombstone gone by the time its item's deletion removes it (deleted with
// its Bundle, say) is what the removal wanted: no error, no retry.
func TestReconcileRemovalOfATombstoneGone(t *testing.T) {
	h := newHarnessIntercepted(t, 0, interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
		return apierrors.NewNotFound(limbov1alpha1.GroupVersion.WithResource("tombstones").GroupResource(), obj.GetName())
	}})
	h.reconcile() // the countdown
	h.clock.Step(time.Minute)
	if res, err := h.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: h.key}); err != nil || res != (ctrl.Result{}) {
		t.Errorf("Reconcile = %+v, %v; want done", res, err)
	}
	if n := h.plugin.calls.Load(); n != 1 {
		t.Errorf("the item was deleted %d times, want once", n)
	}
}
