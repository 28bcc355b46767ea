package limboscan

import (
	"context"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Forbidden tells a scan which LIST errors mean that the controller may not list
// a kind: its RBAC was narrowed to the kinds Bundles may use, as
// docs/install.md recommends. The controller cannot watch such a kind either,
// so no Bundle of its can have an object of it that it manages, and an object
// of it in limbo could not be deleted anyway: a scan skips the kind instead of
// failing, which would retry it (and log an error) for as long as the rule
// stands. The caller lists it again later (the reaper at its next full scan,
// the start scan after a backoff), so a rule widened later, or a grant not yet
// in force when the controller started, is noticed. Each kind is logged once. The zero value is ready to use.
type Forbidden struct {
	mu     sync.Mutex
	logged map[schema.GroupVersionKind]bool
}

// Skip reports whether err, from a LIST of gvk, is the API server's refusal of
// it, and logs the first refusal of each kind.
func (f *Forbidden) Skip(ctx context.Context, gvk schema.GroupVersionKind, err error) bool {
	if !apierrors.IsForbidden(err) {
		return false
	}
	f.mu.Lock()
	first := !f.logged[gvk]
	if f.logged == nil {
		f.logged = map[schema.GroupVersionKind]bool{}
	}
	f.logged[gvk] = true
	f.mu.Unlock()
	if first {
		log.FromContext(ctx).Info("not scanning a kind the controller may not list (grant list and watch on it to include it)", "kind", gvk.String(), "reason", err.Error())
	}
	return true
}
