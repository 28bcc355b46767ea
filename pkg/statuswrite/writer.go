package statuswrite

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Status is a pointer to a status struct (S) with generated deep copy.
type Status[S any] interface {
	*S
	DeepCopy() *S
}

// Writer writes the status (S) of one kind of object and remembers what it wrote
// to each object until the cache shows it. It assumes it is the only writer of
// that status, as a controller is of its own kind's status. The zero value is
// ready to use; a Writer is safe for concurrent use.
type Writer[S any, P Status[S]] struct {
	last sync.Map // types.NamespacedName → *written[S]
	// unsure are the objects a write to failed (types.NamespacedName → UID):
	// what the API server holds is unknown — the write before it, which the
	// cache may not show yet, or this one, which may have landed — and a merge
	// patch computed against a guess would leave out a field set back to the
	// guess's value. Their next write replaces the status whole.
	unsure sync.Map
}

type written[S any] struct {
	uid types.UID
	// resourceVersion is the one the write produced.
	resourceVersion string
	status          S
}

// Known replaces status, the status field of obj as the cache holds it, with
// the status the API server holds as far as w knows: the one w last wrote, when
// the cache has not caught up with that write yet.
func (w *Writer[S, P]) Known(obj client.Object, status P) {
	key := client.ObjectKeyFromObject(obj)
	v, ok := w.last.Load(key)
	if !ok {
		return
	}
	last := v.(*written[S])
	switch {
	case last.uid != obj.GetUID():
		w.last.CompareAndDelete(key, v) // an object of the same name, created since
	case last.resourceVersion == obj.GetResourceVersion() || equality.Semantic.DeepEqual(*status, last.status):
		w.last.CompareAndDelete(key, v) // the cache shows the write (or a later version)
	default:
		*status = *P(&last.status).DeepCopy()
	}
}

// Patch writes want as the status of obj, whose status field is status, unless
// status holds it already (call Known on cached copies first). opts are those
// of the merge patch (a write decided on a fresh read passes
// client.MergeFromWithOptimisticLock). On success obj is the API server's
// response; errors are returned as they are.
func (w *Writer[S, P]) Patch(ctx context.Context, c client.Client, obj client.Object, status, want P, opts ...client.MergeFromOption) error {
	key := client.ObjectKeyFromObject(obj)
	if uid, unsure := w.unsure.Load(key); unsure && uid == obj.GetUID() {
		// The status replaced whole, guarded by the resourceVersion of the copy
		// decided on: a copy older than the API server's is a Conflict, and
		// the next pass, on a newer copy, writes again.
		*status = *want.DeepCopy()
		if err := c.Status().Update(ctx, obj); err != nil {
			return err
		}
		w.unsure.Delete(key)
		w.last.Store(key, &written[S]{uid: obj.GetUID(), resourceVersion: obj.GetResourceVersion(), status: *status.DeepCopy()})
		return nil
	}
	if equality.Semantic.DeepEqual(status, want) {
		return nil
	}
	orig := obj.DeepCopyObject().(client.Object)
	*status = *want.DeepCopy()
	if err := c.Status().Patch(ctx, obj, client.MergeFromWithOptions(orig, opts...)); err != nil {
		// What the API server holds is unknown again (see unsure).
		w.last.Delete(key)
		w.unsure.Store(key, obj.GetUID())
		return err
	}
	w.last.Store(key, &written[S]{uid: obj.GetUID(), resourceVersion: obj.GetResourceVersion(), status: *status.DeepCopy()})
	return nil
}

// Forget drops what w remembers of the object named key (it is gone).
func (w *Writer[S, P]) Forget(key types.NamespacedName) {
	w.last.Delete(key)
	w.unsure.Delete(key)
}
