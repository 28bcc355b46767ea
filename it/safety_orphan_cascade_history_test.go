package it

import "testing"

// The garbage collector can remove the finalizer orphan without orphaning
// anything: after a kube-apiserver restart its graph may not know the Bundle's
// dependents yet (the soak saw this, seed 455692147). If limbo's watch of the
// Bundle misses the version that carried orphan meanwhile — limbo down, or its
// watch reconnecting — then nothing on the Bundle or its objects tells the
// delete from a background one any more: every object is still controlled by
// the Bundle. Only the Bundle's history does. Here limbo is down, the
// collector's stale graph is played by taking the owner references off before
// the delete, and given back once the collector has let the Bundle go. limbo
// must still delete nothing, disown the objects (or the collector deletes them
// once the Bundle is gone), and let the Bundle go.
func TestOrphanCascadeSkippedByCollector(t *testing.T) {
	ns, b, args := readyThenLimboDown(t, "kept", "delayed")
	for _, name := range []string{"kept", "delayed"} {
		patchObject(t, configMapGVK, ns, name, `{"metadata":{"ownerReferences":null}}`)
	}
	deleteOrphaning(t, b, ns)
	controlledAgain(t, b, ns, "kept", "delayed")
	leftBehindOnceBack(t, b, ns, args, "kept", "delayed")
}
