package bundle

import (
	"context"
	"sync"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// bindsOnFirstUse reports whether StorageClass class binds a claim's volume on
// first use (volumeBindingMode WaitForFirstConsumer), as the API server says.
// A class that cannot be read (gone, not allowed) is taken as binding at once:
// its claims then wait to be Bound, as kstatus says, the way they did before
// limbo looked.
func (r *Reconciler) bindsOnFirstUse(ctx context.Context, class string) bool {
	modes := r.bindingModes.of(r)
	if mode, ok := modes.Get(class); ok {
		return mode == storagev1.VolumeBindingWaitForFirstConsumer
	}
	var sc storagev1.StorageClass
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: class}, &sc); err != nil {
		log.FromContext(ctx).V(1).Info("StorageClass not read: its claims wait to be Bound", "storageClass", class, "error", err.Error())
		if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
			// An answer that stands (a class that does not exist, a role
			// without the read): remembered a while, or a claim of a missing
			// class cost a GET at every pass of its Bundle. Other errors pass.
			modes.Add(class, storagev1.VolumeBindingImmediate, unreadableClassTTL)
		}
		return false
	}
	mode := storagev1.VolumeBindingImmediate
	if sc.VolumeBindingMode != nil {
		mode = *sc.VolumeBindingMode
	}
	modes.Add(class, mode, bindingModeTTL)
	return mode == storagev1.VolumeBindingWaitForFirstConsumer
}

const (
	// bindingModeTTL is how long a StorageClass's binding mode read is reused:
	// the mode cannot change, but a class can be deleted and created again with
	// another. A claim waiting for its first consumer is judged at every pass of
	// its Bundle, which would otherwise read its class each time.
	bindingModeTTL = 5 * time.Minute
	// unreadableClassTTL is how long a class found missing or forbidden is taken
	// as binding at once without asking again: short, so that a class created
	// for a waiting claim is seen soon.
	unreadableClassTTL = 30 * time.Second
	// maxBindingModes bounds the classes remembered (a cluster has a handful).
	maxBindingModes = 256
)

// bindingModes remembers StorageClasses' binding modes, by class name, for
// bindingModeTTL by the Reconciler's clock. The zero value is ready to use.
type bindingModes struct {
	once  sync.Once
	cache *utilcache.LRUExpireCache
}

// of is the cache, made at the first use with r's clock.
func (m *bindingModes) of(r *Reconciler) *utilcache.LRUExpireCache {
	m.once.Do(func() { m.cache = utilcache.NewLRUExpireCacheWithClock(maxBindingModes, r.Clock) })
	return m.cache
}
