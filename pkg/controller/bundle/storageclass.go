package bundle

import (
	"context"
	"sync"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// bindsOnFirstUse reports whether StorageClass class binds a claim's volume on
// first use (volumeBindingMode WaitForFirstConsumer), as the API server says.
// A class that cannot be read (gone, not allowed) is taken as binding at once:
// its claims then wait to be Bound, as kstatus says, the way they did before
// limbo looked.
func (r *Reconciler) bindsOnFirstUse(ctx context.Context, class string) bool {
	now := r.Clock.Now()
	if mode, ok := r.bindingModes.get(class, now); ok {
		return mode == storagev1.VolumeBindingWaitForFirstConsumer
	}
	var sc storagev1.StorageClass
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: class}, &sc); err != nil {
		log.FromContext(ctx).V(1).Info("StorageClass not read: its claims wait to be Bound", "storageClass", class, "error", err.Error())
		return false
	}
	mode := storagev1.VolumeBindingImmediate
	if sc.VolumeBindingMode != nil {
		mode = *sc.VolumeBindingMode
	}
	r.bindingModes.put(class, mode, now)
	return mode == storagev1.VolumeBindingWaitForFirstConsumer
}

// bindingModeTTL is how long a StorageClass's binding mode read is reused: the
// mode cannot change, but a class can be deleted and created again with another.
// A claim waiting for its first consumer is judged at every pass of its Bundle,
// which would otherwise read its class each time.
const bindingModeTTL = 5 * time.Minute

// bindingModes remembers StorageClasses' binding modes for bindingModeTTL. The
// zero value is ready to use.
type bindingModes struct {
	mu    sync.Mutex
	modes map[string]timedMode
}

type timedMode struct {
	mode storagev1.VolumeBindingMode
	at   time.Time
}

func (m *bindingModes) get(class string, now time.Time) (storagev1.VolumeBindingMode, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	read, ok := m.modes[class]
	if !ok || now.Sub(read.at) >= bindingModeTTL || now.Before(read.at) {
		return "", false
	}
	return read.mode, true
}

func (m *bindingModes) put(class string, mode storagev1.VolumeBindingMode, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.modes == nil {
		m.modes = map[string]timedMode{}
	}
	m.modes[class] = timedMode{mode: mode, at: now}
}
