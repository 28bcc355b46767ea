package bundle

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// An alarm wakes its Bundle once; a later alarm of the Bundle replaces the
// earlier one; a cleared alarm does not ring.
func TestAlarms(t *testing.T) {
	wake := make(chan event.GenericEvent, 4)
	a := newAlarms(wake)
	shop, cafe := types.NamespacedName{Namespace: "ns", Name: "shop"}, types.NamespacedName{Namespace: "ns", Name: "cafe"}

	a.set(shop, time.Hour)
	a.set(shop, 10*time.Millisecond) // replaces the hour
	a.set(cafe, time.Hour)
	a.clear(cafe)
	select {
	case e := <-wake:
		if got := (types.NamespacedName{Namespace: e.Object.GetNamespace(), Name: e.Object.GetName()}); got != shop {
			t.Fatalf("woke %v, want %v", got, shop)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the alarm did not ring")
	}
	// Nothing else rings: the hour was replaced, cafe's was cleared.
	a.mu.Lock()
	left := len(a.timers)
	a.mu.Unlock()
	if left != 0 {
		t.Errorf("%d alarms left, want none", left)
	}
	select {
	case e := <-wake:
		t.Errorf("woke %s/%s again", e.Object.GetNamespace(), e.Object.GetName())
	case <-time.After(50 * time.Millisecond):
	}
}
