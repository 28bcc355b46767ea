package bundle

import (
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
)

// alarms wake Bundles whose pass failed at the time the pass asked to come back
// (a deadline). controller-runtime drops the RequeueAfter of a pass that returns
// an error, and the work queue backs the Bundle off instead (up to retry.MaxDelay):
// one orphan whose delete keeps failing, or a plugin whose backend is down, would
// make every other deadline of the Bundle up to 30 s late. One alarm per Bundle:
// a later pass replaces it.
type alarms struct {
	wake chan<- event.GenericEvent

	mu     sync.Mutex
	timers map[types.NamespacedName]*time.Timer
}

func newAlarms(wake chan<- event.GenericEvent) *alarms {
	return &alarms{wake: wake, timers: map[types.NamespacedName]*time.Timer{}}
}

// set wakes the Bundle key after d, replacing its earlier alarm.
func (a *alarms) set(key types.NamespacedName, d time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if t := a.timers[key]; t != nil {
		t.Stop()
	}
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		a.mu.Lock()
		if a.timers[key] == t { // set assigned t before it let go of the lock
			delete(a.timers, key)
		}
		a.mu.Unlock()
		plugin.Trigger(a.wake, bundleRef(key))
	})
	a.timers[key] = t
}

// now wakes the Bundle key at once, leaving its alarm as it is.
func (a *alarms) now(key types.NamespacedName) {
	plugin.Trigger(a.wake, bundleRef(key))
}

// bundleRef is the object a wake-up names: the Bundle key.
func bundleRef(key types.NamespacedName) *limbov1alpha1.Bundle {
	return &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
}

// clear drops the Bundle key's alarm: a pass that succeeded has its own requeue.
func (a *alarms) clear(key types.NamespacedName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if t := a.timers[key]; t != nil {
		t.Stop()
		delete(a.timers, key)
	}
}
