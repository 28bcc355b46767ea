package it

import "testing"

// `kubectl delete tombstone` forces the external delete now, whatever the delay.
func TestNamespaceGCDeleteTombstoneForces(t *testing.T) {
	t.Parallel()
	f := newNSGCFixture(t)
	app, b, ts := f.deletedApp(t, "nsgc-force-", 0, "1h")
	if !f.backendHas(app) {
		t.Fatal("deleted before the deadline, an hour away")
	}

	if out, err := kubectl(t, "delete", "tombstone", "-n", f.ns, ts.Name); err != nil {
		t.Fatalf("kubectl delete tombstone: %v\n%s", err, out)
	}
	f.waitBackendGone(t, app)
	if n := f.deletes(); n != 1 {
		t.Errorf("%d DELETE calls, want 1", n)
	}
	waitNSGCReady(t, b, 1)
}
