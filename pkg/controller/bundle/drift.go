package bundle

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

const (
	// driftWindow and driftRepeats make a fight: an object whose fields limbo
	// put back driftRepeats times within driftWindow has another writer that
	// keeps changing them (an autoscaler, a webhook, another operator).
	driftWindow  = 10 * time.Minute
	driftRepeats = 3
	// driftWatchMax bounds the objects followed at once; past it, those whose
	// corrections are all older than the window go first.
	driftWatchMax = 4096
)

// driftWatch counts, per object, the drift limbo put back, so that a fight with
// another writer — each putting back what the other changed, for good — is
// told to the Bundle's author once per window (a Warning DriftRepeated naming
// the writers), instead of showing only as a stream of Updated events. limbo
// cannot tell which of the two is right, so it does not stop applying: the
// template is the contract (docs/user-guide.md "Fields other controllers set").
type driftWatch struct {
	mu sync.Mutex
	m  map[uidKey]*driftRecord
}

type driftRecord struct {
	// at are the corrections within the window, oldest first.
	at []time.Time
	// warned is when the object was last told of; zero: never.
	warned time.Time
}

// due reports whether a correction of the object uid at now would warn
// (corrected's warn), without recording one: the writers must be read before the
// apply takes their fields back, and only an apply that succeeded counts.
func (w *driftWatch) due(uid types.UID, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	rec := w.m[keyOf(uid)]
	if rec == nil {
		return driftRepeats <= 1
	}
	return len(recent(rec.at, now))+1 >= driftRepeats && (rec.warned.IsZero() || now.Sub(rec.warned) >= driftWindow)
}

// corrected records that limbo put back drift on the object uid at now, and
// reports the corrections within the window, and whether to warn: the count
// reached driftRepeats and the last warning is a window old.
func (w *driftWatch) corrected(uid types.UID, now time.Time) (n int, warn bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[uidKey]*driftRecord{}
	}
	k := keyOf(uid)
	rec := w.m[k]
	if rec == nil {
		if len(w.m) >= driftWatchMax {
			w.evict(now)
		}
		rec = &driftRecord{}
		w.m[k] = rec
	}
	rec.at = append(recent(rec.at, now), now)
	if len(rec.at) < driftRepeats || (!rec.warned.IsZero() && now.Sub(rec.warned) < driftWindow) {
		return len(rec.at), false
	}
	rec.warned = now
	return len(rec.at), true
}

// forget drops what is known of the object uid (it is gone, or no longer the
// Bundle's).
func (w *driftWatch) forget(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, keyOf(uid))
}

// evict makes room: the records with no correction within the window go, and
// if none is that old, one record, whichever the map gives first.
func (w *driftWatch) evict(now time.Time) {
	for k, rec := range w.m {
		if len(recent(rec.at, now)) == 0 {
			delete(w.m, k)
		}
	}
	for k := range w.m {
		if len(w.m) < driftWatchMax {
			return
		}
		delete(w.m, k)
	}
}

// recent is at without the times older than the window before now.
func recent(at []time.Time, now time.Time) []time.Time {
	i := 0
	for i < len(at) && now.Sub(at[i]) >= driftWindow {
		i++
	}
	return at[i:]
}

// recentWriters names the field managers other than limbo's apply that wrote the
// object within the window before now, as its managedFields record them (a
// subresource's writer with it: "kube-controller-manager (scale)"), sorted; nil
// when the object cannot be read. Read before limbo puts the drift back: a
// writer whose every field the apply takes back loses its entry.
func (r *Reconciler) recentWriters(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string, now time.Time) []string {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		return nil
	}
	var writers []string
	for _, mf := range obj.ManagedFields {
		if mf.Manager == limbov1alpha1.FieldManager && mf.Operation == metav1.ManagedFieldsOperationApply && mf.Subresource == "" {
			continue
		}
		if mf.Time == nil || now.Sub(mf.Time.Time) > driftWindow {
			continue
		}
		writer := mf.Manager
		if mf.Subresource != "" {
			writer += " (" + mf.Subresource + ")"
		}
		if !slices.Contains(writers, writer) {
			writers = append(writers, writer)
		}
	}
	slices.Sort(writers)
	return writers
}

// warnDrift tells the Bundle's author that resource name's object keeps being
// changed by another writer and put back by limbo.
func (p *pass) warnDrift(name string, obj metav1.Object, kind string, n int, writers []string) {
	by := "another writer"
	if len(writers) > 0 {
		by = strings.Join(writers, ", ")
	}
	p.announce(corev1.EventTypeWarning, limbov1alpha1.EventDriftRepeated,
		"resource %q: %s %q had fields limbo sets changed %d times in %s (by %s), and put back each time; "+
			"leave the fields another controller manages out of the template", name, kind, obj.GetName(), n, driftWindow, by)
}
