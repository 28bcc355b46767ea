package softdelete_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/log"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// A stamp that landed while a policy dropped another of limbo's marks (the
// pending-deletion label) starts a countdown all the same: it is announced —
// the object is deleted at its deadline — and the write fails, saying why.
// Failed without a word, the deletion came with no DeletionScheduled and no
// "stamped" line in the audit trail. A stamp the policy dropped itself starts
// none: announced, at every pass, it named a deadline nobody keeps.
func TestStampAnnouncedWhenOnlyTheLabelIsDropped(t *testing.T) {
	for _, tc := range []struct {
		name        string
		drop        func(obj client.Object) // what the policy takes from the answer
		wantErr     string
		wantEvents  []string
		wantStamped bool // a "stamped" line in the audit trail
	}{
		{
			name: "the label dropped: the countdown runs, announced",
			drop: func(obj client.Object) {
				labels := obj.GetLabels()
				delete(labels, limbov1alpha1.LabelPendingDeletion)
				obj.SetLabels(labels)
			},
			wantErr:     "has no label " + limbov1alpha1.LabelPendingDeletion,
			wantEvents:  []string{"Normal DeletionScheduled ConfigMap team-a/db is in limbo for 1h0m0s: deleted at 2025-03-14T13:30:45Z"},
			wantStamped: true,
		},
		{
			name: "the stamp dropped: no countdown, nothing announced",
			drop: func(obj client.Object) {
				annotations := obj.GetAnnotations()
				delete(annotations, limbov1alpha1.AnnotationDeletionTimestamp)
				obj.SetAnnotations(annotations)
			},
			wantErr: "has no annotation " + limbov1alpha1.AnnotationDeletionTimestamp,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, cm("db", map[string]string{delayKey: "1h"}, nil))
			h.engine.Client = interceptor.NewClient(h.client.(client.WithWatch), interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				if err := c.Patch(ctx, obj, patch, opts...); err != nil {
					return err
				}
				tc.drop(obj)
				return nil
			}})
			var lines []string
			logger := funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{})
			out := h.engine.Orphan(log.IntoContext(context.Background(), logger), bundle(), h.live(t, "db"), nil)
			if !errors.Is(out.Err, softdelete.ErrMarksNotKept) || !strings.Contains(out.Err.Error(), tc.wantErr) {
				t.Errorf("Err = %v, want the marks not kept, saying %q", out.Err, tc.wantErr)
			}
			if got := h.events(); !reflect.DeepEqual(got, tc.wantEvents) {
				t.Errorf("events %q, want %q", got, tc.wantEvents)
			}
			if stamped := slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, `"msg"="stamped"`) }); stamped != tc.wantStamped {
				t.Errorf("log lines:\n%s\nwant a \"stamped\" line: %v", strings.Join(lines, "\n"), tc.wantStamped)
			}
		})
	}
}

// A release whose marks a policy drops (one that strips the limbo.dev/ keys a
// tenant's write adds: limbo writes as the Bundle's ServiceAccount) fails and
// leaves the object its Bundle's. In one write with the owner references, it
// left an object owned by nobody and unmarked — what a --cascade=orphan delete
// leaves, which ended the teardown deleting nothing more.
func TestReleaseWhoseMarksAreDroppedKeepsTheOwner(t *testing.T) {
	b := bundle()
	u := cm("db", map[string]string{delayKey: "1h"}, map[string]string{bundleKey: "shop"})
	owner := metav1.OwnerReference{APIVersion: limbov1alpha1.GroupVersion.String(), Kind: "Bundle", Name: "shop", UID: b.UID, Controller: ptr.To(true)}
	u.SetOwnerReferences([]metav1.OwnerReference{owner})
	h := newHarness(t, u)
	h.engine.Client = interceptor.NewClient(h.client.(client.WithWatch), interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
		data, err := patch.Data(obj)
		if err != nil {
			return err
		}
		// The policy: limbo.dev/ annotations and labels the write adds go.
		stripped := strings.NewReplacer(`"limbo.dev/released"`, `"x-released"`, `"limbo.dev/deletionTimestamp"`, `"x-stamp"`, `"limbo.dev/pending-deletion"`, `"x-pending"`).Replace(string(data))
		return c.Patch(ctx, obj, client.RawPatch(patch.Type(), []byte(stripped)), opts...)
	}})
	err := h.engine.Release(context.Background(), b, h.live(t, "db"), b, nil)
	if !errors.Is(err, softdelete.ErrMarksNotKept) {
		t.Fatalf("Release: %v, want the marks not kept", err)
	}
	if live := h.live(t, "db"); !metav1.IsControlledBy(live, b) {
		t.Errorf("owner references %v: the object is no longer its Bundle's", live.GetOwnerReferences())
	}
}

// A release retried after its marks half landed (a policy dropped the
// pending-deletion label, not the annotations) rewrites nothing: the released
// time it wrote first stays, so that the retry is no write that wakes the
// next pass at once — a pass a second for as long as the policy stands.
func TestReleaseRetriedKeepsItsTime(t *testing.T) {
	b := bundle()
	u := cm("db", map[string]string{delayKey: "1h"}, map[string]string{bundleKey: "shop"})
	u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: limbov1alpha1.GroupVersion.String(), Kind: "Bundle", Name: "shop", UID: b.UID, Controller: ptr.To(true)}})
	h := newHarness(t, u)
	clk := testingclock.NewFakePassiveClock(now)
	h.engine.Clock = clk
	h.engine.Client = interceptor.NewClient(h.client.(client.WithWatch), interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
		data, err := patch.Data(obj)
		if err != nil {
			return err
		}
		stripped := strings.Replace(string(data), `"limbo.dev/pending-deletion":"true"`, `"x-pending":"true"`, 1)
		return c.Patch(ctx, obj, client.RawPatch(patch.Type(), []byte(stripped)), opts...)
	}})
	if err := h.engine.Release(context.Background(), b, h.live(t, "db"), b, nil); !errors.Is(err, softdelete.ErrMarksNotKept) {
		t.Fatalf("first Release: %v, want the label not kept", err)
	}
	first := h.live(t, "db")
	firstVersion, firstReleased := first.GetResourceVersion(), first.GetAnnotations()[limbov1alpha1.AnnotationReleased]
	clk.SetTime(now.Add(time.Minute))
	if err := h.engine.Release(context.Background(), b, first, b, nil); !errors.Is(err, softdelete.ErrMarksNotKept) {
		t.Fatalf("second Release: %v, want the label not kept", err)
	}
	// The API server turns a patch that changes nothing into no write (the
	// fake client here counts a new resourceVersion all the same).
	if again := h.live(t, "db"); again.GetAnnotations()[limbov1alpha1.AnnotationReleased] != firstReleased {
		t.Errorf("the retry wrote the object anew (resourceVersion %s → %s): released %q → %q", firstVersion, again.GetResourceVersion(),
			firstReleased, again.GetAnnotations()[limbov1alpha1.AnnotationReleased])
	}
}

// The pending-deletion label put back on an orphan counting down is no
// failure when a policy drops it from every write (the countdown runs all
// the same; failing each pass of its days retried what the policy undoes),
// and a label of another value is put back as "true", which the reaper and
// kubectl limbo pending select.
func TestKeepPendingLabel(t *testing.T) {
	const countingDown = "30m46250ms"
	for _, tc := range []struct {
		name      string
		label     string // the object's pending-deletion label; "" for none
		stripped  bool   // a policy drops the label from the write's answer
		wantCalls int
	}{
		{name: "labelled: nothing written", label: "true"},
		{name: "another value: put back", label: "no", wantCalls: 1},
		{name: "dropped by a policy: no failure", stripped: true, wantCalls: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var labels map[string]string
			if tc.label != "" {
				labels = map[string]string{pendingKey: tc.label}
			}
			h := newHarness(t, cm("db", map[string]string{delayKey: countingDown, stampKey: "2025-03-14T12:00:00Z"}, labels))
			if tc.stripped {
				inner := h.engine.Client
				h.engine.Client = interceptor.NewClient(inner.(client.WithWatch), interceptor.Funcs{
					Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
						if err := inner.Patch(ctx, obj, patch, opts...); err != nil {
							return err
						}
						l := obj.GetLabels()
						delete(l, pendingKey)
						obj.SetLabels(l)
						return nil
					}})
			}
			out := h.engine.Orphan(context.Background(), bundle(), h.live(t, "db"), nil)
			if out.Err != nil {
				t.Errorf("outcome error %v, want none", out.Err)
			}
			if len(h.calls) != tc.wantCalls {
				t.Errorf("calls %q, want %d", h.calls, tc.wantCalls)
			}
		})
	}
}
