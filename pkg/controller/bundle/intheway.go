package bundle

import (
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
)

// objectsInTheWay remembers, per Bundle, the objects its passes found in the
// way: an object of a name the Bundle declares that it may not take (NotOwned,
// ControlledByOther; see foundInTheWay). Such an object is not labelled, so
// not in the cache, and a pass that did not know it would find it again with
// the create-only apply, a write the API server refuses; a pass reads the
// objects remembered from the API server instead (pass.wasInTheWay).
//
// It is kept per object, not per resource: a generator's one status tells the
// state of one of its objects (the last that is not Ready), so it neither
// says which of them is in the way nor that none is. Nothing else records it
// for a generated object, and the object in the way may not be marked; so the
// memory is the reconciler's own, and a start begins with none (one refused
// create of each object in the way, which the pass then reads and remembers).
// Whatever it says, the read judges the object as it is now: an object gone
// is created, one labelled as the Bundle's or annotated for adoption is
// adopted, one whose other controller let it go is judged by the same rules.
// A wrong memory costs a request, never an apply.
//
// Its zero value is ready to use; it is safe for concurrent use (the object
// resources of a wave are synced at once).
type objectsInTheWay struct {
	mu      sync.Mutex
	bundles map[types.NamespacedName]bundleObjectsInTheWay
}

// bundleObjectsInTheWay is what objectsInTheWay remembers of one Bundle.
type bundleObjectsInTheWay struct {
	// uid is the Bundle's: a Bundle created again under the name inherits
	// nothing.
	uid types.UID
	// keys are the objects found in the way, by objectKey.
	keys map[string]bool
}

// has reports whether b's last sync of the object key found it in the way.
func (w *objectsInTheWay) has(b *limbov1alpha1.Bundle, key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	rec, ok := w.bundles[types.NamespacedName{Namespace: b.Namespace, Name: b.Name}]
	return ok && rec.uid == b.UID && rec.keys[key]
}

// record remembers what a sync of b's object key found: in the way or not.
func (w *objectsInTheWay) record(b *limbov1alpha1.Bundle, key string, inTheWay bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	name := types.NamespacedName{Namespace: b.Namespace, Name: b.Name}
	rec, ok := w.bundles[name]
	if !ok || rec.uid != b.UID {
		if !inTheWay {
			return
		}
		rec = bundleObjectsInTheWay{uid: b.UID, keys: map[string]bool{}}
		if w.bundles == nil {
			w.bundles = map[types.NamespacedName]bundleObjectsInTheWay{}
		}
		w.bundles[name] = rec
	}
	if inTheWay {
		rec.keys[key] = true
		return
	}
	delete(rec.keys, key)
	if len(rec.keys) == 0 {
		delete(w.bundles, name)
	}
}

// keepDeclared forgets the objects of b that declared (objectKey → resource)
// does not hold: a pass that went through b's whole spec no longer declares
// them, and a Bundle that keeps naming new objects would otherwise keep them
// all until it is gone.
func (w *objectsInTheWay) keepDeclared(b *limbov1alpha1.Bundle, declared ...map[string]string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	name := types.NamespacedName{Namespace: b.Namespace, Name: b.Name}
	rec, ok := w.bundles[name]
	if !ok {
		return
	}
	for key := range rec.keys {
		if rec.uid != b.UID || !declaredIn(key, declared) {
			delete(rec.keys, key)
		}
	}
	if len(rec.keys) == 0 {
		delete(w.bundles, name)
	}
}

// awaiting lists, in order, the Bundles of namespace whose last sync found the
// object key in the way: a change of that object (released by the Bundle
// that controlled it, deleted) may be what they wait for. Only objects the
// cache holds — labelled as some Bundle's, as one handed over is — are seen
// changing; the 30 s recheck finds the rest.
func (w *objectsInTheWay) awaiting(namespace, key string) []types.NamespacedName {
	w.mu.Lock()
	defer w.mu.Unlock()
	var names []types.NamespacedName
	for name, rec := range w.bundles {
		if name.Namespace == namespace && rec.keys[key] {
			names = append(names, name)
		}
	}
	slices.SortFunc(names, func(a, b types.NamespacedName) int { return strings.Compare(a.Name, b.Name) })
	return names
}

// forget drops what is remembered of the Bundle name: it is gone.
func (w *objectsInTheWay) forget(name types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.bundles, name)
}

func declaredIn(key string, declared []map[string]string) bool {
	for _, d := range declared {
		if _, ok := d[key]; ok {
			return true
		}
	}
	return false
}

// foundInTheWay reports whether st says an object not the Bundle's is where
// its object goes, untouched.
func foundInTheWay(st limbov1alpha1.ResourceStatus) bool {
	return st.State == limbov1alpha1.ResourceError && (st.Reason == limbov1alpha1.ReasonNotOwned || st.Reason == limbov1alpha1.ReasonControlledByOther)
}

// statusSaysInTheWay reports whether status, the Bundle's last written, says
// that the object key of object resource name was in the way. It is the
// memory of a process that ran before this one (objectsInTheWay starts
// empty), for object resources only: an object resource's status tells the
// state of the object it names; a generator's names its first object and
// tells the state of its last that is not Ready.
func statusSaysInTheWay(status *limbov1alpha1.BundleStatus, name, key string) bool {
	for _, st := range status.Resources {
		if st.Name == name {
			return foundInTheWay(st) && st.Object != nil &&
				bundlespec.ObjectKey(schema.FromAPIVersionAndKind(st.Object.APIVersion, st.Object.Kind).GroupKind(), st.Object.Name) == key
		}
	}
	return false
}
