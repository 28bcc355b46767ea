package statuswrite

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// statusPatches is a client that records the status patches it is sent and
// answers them as the API server would: the object with the next
// resourceVersion (rv is the last one given).
type statusPatches struct {
	client.Client // nil: any other call panics
	bodies        []string
	err           error
	rv            int
}

func (c *statusPatches) Status() client.SubResourceWriter { return statusWriter{c} }

type statusWriter struct{ c *statusPatches }

func (w statusWriter) Patch(_ context.Context, obj client.Object, patch client.Patch, _ ...client.SubResourcePatchOption) error {
	data, err := patch.Data(obj)
	if err != nil {
		return err
	}
	w.c.bodies = append(w.c.bodies, string(data))
	if w.c.err != nil {
		return w.c.err
	}
	w.c.rv++
	obj.SetResourceVersion(strconv.Itoa(w.c.rv))
	return nil
}

func (statusWriter) Create(context.Context, client.Object, client.Object, ...client.SubResourceCreateOption) error {
	panic("not used")
}

func (w statusWriter) Update(_ context.Context, obj client.Object, _ ...client.SubResourceUpdateOption) error {
	b := obj.(*limbov1alpha1.Bundle)
	data, err := json.Marshal(b.Status)
	if err != nil {
		return err
	}
	w.c.bodies = append(w.c.bodies, "UPDATE rv="+obj.GetResourceVersion()+" "+string(data))
	if w.c.err != nil {
		return w.c.err
	}
	w.c.rv++
	obj.SetResourceVersion(strconv.Itoa(w.c.rv))
	return nil
}

func (statusWriter) Apply(context.Context, runtime.ApplyConfiguration, ...client.SubResourceApplyOption) error {
	panic("not used")
}

type bundleStatuses = Writer[limbov1alpha1.BundleStatus, *limbov1alpha1.BundleStatus]

func bundle(uid, rv string, pending ...string) *limbov1alpha1.Bundle {
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", UID: types.UID(uid), ResourceVersion: rv}}
	for _, name := range pending {
		b.Status.PendingDeletions = append(b.Status.PendingDeletions, limbov1alpha1.PendingDeletion{Kind: "ConfigMap", Name: name})
	}
	b.Status.PendingDeletionCount = int32(len(pending))
	return b
}

// pendingWritten returns a writer that wrote "db is pending" to Bundle b
// (resourceVersion 1 before the write, 2 after), and the client it wrote through.
func pendingWritten(t *testing.T) (*bundleStatuses, *statusPatches, *limbov1alpha1.Bundle) {
	t.Helper()
	w, c := &bundleStatuses{}, &statusPatches{rv: 1}
	b := bundle("u1", "1")
	pending := bundle("u1", "", "db").Status
	if err := w.Patch(context.Background(), c, b, &b.Status, &pending); err != nil {
		t.Fatal(err)
	}
	if b.ResourceVersion != "2" {
		t.Fatalf("obj is not the response: resourceVersion %q", b.ResourceVersion)
	}
	return w, c, b
}

// A write of "db is pending" produced resourceVersion 2; what the cache shows
// next decides the status a pass starts from.
func TestKnown(t *testing.T) {
	tests := []struct {
		name        string
		cached      *limbov1alpha1.Bundle
		wantPending int32
		remembered  bool
	}{
		{"the cache has not seen the write: the written status", bundle("u1", "1"), 1, true},
		{"the cache shows the write", bundle("u1", "2", "db"), 1, false},
		{"the cache shows a later version with the written status", bundle("u1", "3", "db"), 1, false},
		{"the cache shows the write's version", bundle("u1", "2"), 0, false},
		{"another object of the same name", bundle("u2", "7"), 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, _, b := pendingWritten(t)
			w.Known(tt.cached, &tt.cached.Status)
			if got := tt.cached.Status.PendingDeletionCount; got != tt.wantPending {
				t.Errorf("a pass starts from %d pending deletions, want %d", got, tt.wantPending)
			}
			_, remembered := w.last.Load(client.ObjectKeyFromObject(b))
			if remembered != tt.remembered {
				t.Errorf("remembered = %v, want %v", remembered, tt.remembered)
			}
		})
	}
}

// The scenario that left a Bundle listing a deleted orphan: a pass on a copy
// from before limbo's own write computes the status that copy shows. It is
// written all the same, as a patch from what the API server holds.
func TestPatchOnStaleCopy(t *testing.T) {
	w, c, _ := pendingWritten(t)
	stale := bundle("u1", "1")
	w.Known(stale, &stale.Status)
	none := bundle("u1", "").Status
	if err := w.Patch(context.Background(), c, stale, &stale.Status, &none); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"status":{"pendingDeletionCount":1,"pendingDeletions":[{"apiVersion":"","kind":"ConfigMap","name":"db"}]}}`,
		`{"status":{"pendingDeletionCount":0,"pendingDeletions":null}}`,
	}
	if len(c.bodies) != len(want) {
		t.Fatalf("patches %q, want %q", c.bodies, want)
	}
	for i := range want {
		if c.bodies[i] != want[i] {
			t.Errorf("patch %d: %s, want %s", i, c.bodies[i], want[i])
		}
	}

	// The cache catches up: nothing more to write.
	caught := bundle("u1", stale.ResourceVersion)
	w.Known(caught, &caught.Status)
	if err := w.Patch(context.Background(), c, caught, &caught.Status, &none); err != nil {
		t.Fatal(err)
	}
	if len(c.bodies) != 2 {
		t.Errorf("an unchanged status was written again: %s", c.bodies[2:])
	}
}

// A failed write leaves the API server's status unknown: the next pass starts
// from its cache again.
func TestPatchFailureForgets(t *testing.T) {
	w, c, b := pendingWritten(t)
	c.err = errors.New("boom")
	none := bundle("u1", "").Status
	if err := w.Patch(context.Background(), c, b, &b.Status, &none); err == nil {
		t.Fatal("the error was not returned")
	}
	if _, ok := w.last.Load(client.ObjectKeyFromObject(b)); ok {
		t.Error("a failed write is still remembered")
	}
}

// After a failed write, what the API server holds is unknown: the one before,
// which the cache may not show yet, or the failed one, which may have landed.
// The next write replaces the status whole, guarded by the resourceVersion of
// the copy decided on, even when that copy already holds what is wanted; a
// merge patch against the copy left out a field set back to the copy's value,
// and the API server kept the earlier write's. Then patches resume.
func TestWriteAfterAFailureReplacesTheStatus(t *testing.T) {
	w, c, _ := pendingWritten(t) // the server holds "db is pending", resourceVersion 2
	c.err = errors.New("timeout")
	cached := bundle("u1", "1") // the cache has not caught up: no pending deletion
	w.Known(cached, &cached.Status)
	none := bundle("u1", "").Status
	if err := w.Patch(context.Background(), c, cached, &cached.Status, &none); err == nil {
		t.Fatal("the error was not returned")
	}
	c.err = nil
	cached = bundle("u1", "1")
	w.Known(cached, &cached.Status)
	if err := w.Patch(context.Background(), c, cached, &cached.Status, &none); err != nil {
		t.Fatal(err)
	}
	if got, want := c.bodies[len(c.bodies)-1], `UPDATE rv=1 {"pendingDeletionCount":0}`; got != want {
		t.Errorf("write after the failure: %s, want %s", got, want)
	}
	again := bundle("u1", "").Status
	again.PendingDeletionCount = 1
	if err := w.Patch(context.Background(), c, cached, &cached.Status, &again); err != nil {
		t.Fatal(err)
	}
	if got := c.bodies[len(c.bodies)-1]; got != `{"metadata":{"resourceVersion":"3"},"status":{"pendingDeletionCount":1}}` && got != `{"status":{"pendingDeletionCount":1}}` {
		t.Errorf("the write after: %s, want a merge patch", got)
	}
}

// What w remembers is its own copy: neither the object written through (a
// pass may go on editing it in place) nor the status Known hands out (the next
// pass edits it) can change the status the API server holds as far as w knows.
func TestRememberedStatusIsACopy(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(written, known *limbov1alpha1.Bundle)
	}{
		{"the object written through is edited", func(written, _ *limbov1alpha1.Bundle) {
			written.Status.PendingDeletions[0].Name = "edited"
		}},
		{"the status Known handed out is edited", func(_, known *limbov1alpha1.Bundle) {
			known.Status.PendingDeletions[0].Name = "edited"
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w, _, b := pendingWritten(t)
			known := bundle("u1", "1")
			w.Known(known, &known.Status)
			tt.edit(b, known)
			stale := bundle("u1", "1")
			w.Known(stale, &stale.Status)
			if got := stale.Status.PendingDeletions; len(got) != 1 || got[0].Name != "db" {
				t.Errorf("a pass on a stale copy starts from %+v, want the written [db]", got)
			}
		})
	}
}

// Forget drops what w remembers: an object of the name, seen again in the
// cache, is taken as the cache shows it.
func TestForget(t *testing.T) {
	w, _, b := pendingWritten(t)
	w.Forget(client.ObjectKeyFromObject(b))
	stale := bundle("u1", "1")
	w.Known(stale, &stale.Status)
	if stale.Status.PendingDeletionCount != 0 {
		t.Errorf("a forgotten write still replaces the cached status: %+v", stale.Status)
	}
}

// Patch passes its options to the merge patch: a write decided on a fresh read
// (client.MergeFromWithOptimisticLock) carries the resourceVersion it was
// decided on, so that the API server refuses it if the object changed since.
func TestPatchWithOptimisticLock(t *testing.T) {
	w, c := &bundleStatuses{}, &statusPatches{rv: 4}
	b := bundle("u1", "4")
	pending := bundle("u1", "", "db").Status
	if err := w.Patch(context.Background(), c, b, &b.Status, &pending, client.MergeFromWithOptimisticLock{}); err != nil {
		t.Fatal(err)
	}
	want := `{"metadata":{"resourceVersion":"4"},"status":{"pendingDeletionCount":1,"pendingDeletions":[{"apiVersion":"","kind":"ConfigMap","name":"db"}]}}`
	if len(c.bodies) != 1 || c.bodies[0] != want {
		t.Errorf("patches %q, want [%s]", c.bodies, want)
	}
}
