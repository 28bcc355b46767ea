package bundle

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A broken spec is announced once: the next pass of the same spec (a resync,
// another event) finds the error in the Stalled condition it wrote and sends no
// second InvalidSpec Warning.
func TestInvalidSpecAnnouncedOnce(t *testing.T) {
	resources := []limbov1alpha1.Resource{{Name: "cfg", Object: &runtime.RawExtension{Raw: []byte(
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg"},"data":{"k":"!{nowhere}"}}`)}}}
	b := deletedBundle(resources, limbov1alpha1.BundleStatus{})
	b.DeletionTimestamp, b.Finalizers = nil, []string{limbov1alpha1.FinalizerTeardown}
	f := newTeardownFixture(t, b, nil)
	events := make(chan string, 16)
	f.r.Recorder = &record.FakeRecorder{Events: events}
	for range 2 {
		if _, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)}); err == nil {
			t.Fatal("Reconcile of an invalid spec: no error")
		}
	}
	close(events)
	n := 0
	for e := range events {
		if strings.HasPrefix(e, "Warning "+limbov1alpha1.ReasonInvalidSpec+" ") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d InvalidSpec events over two passes of the same spec, want 1", n)
	}
}
