package it

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// The admission policy shipped with the CRDs
// (crds/admission-bundle-teardown-finalizer.yaml) sets a new Bundle's
// teardown finalizer as the API server admits the create, so the controller
// converges it without writing its metadata: its only write of the Bundle is the
// status.
func TestBundleTeardownFinalizerSetAtAdmission(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	waitFinalizerPolicyActive(t, ns)

	b := createBundle(t, ns, "admitted", objectResource(t, "settings", configMap("settings", map[string]any{"k": "v"}, nil)))
	if !slices.Contains(b.Finalizers, limbov1alpha1.FinalizerTeardown) {
		t.Fatalf("the create's answer has finalizers %v, want %s set at admission", b.Finalizers, limbov1alpha1.FinalizerTeardown)
	}
	ready := waitReady(t, b)
	path := "/apis/" + limbov1alpha1.GroupVersion.String() + "/namespaces/" + ns + "/bundles/" + b.Name
	for _, req := range env.ControllerRequests(testenv.Writes, testenv.InNamespace(ns)) {
		if req.Path == path {
			t.Errorf("the controller wrote the Bundle itself (%s), want only its status", req)
		}
	}
	if !slices.Contains(ready.Finalizers, limbov1alpha1.FinalizerTeardown) {
		t.Errorf("finalizers %v, want %s", ready.Finalizers, limbov1alpha1.FinalizerTeardown)
	}
}

// A Bundle without the finalizer (created before the policy was installed, on a
// cluster without it, or stripped by hand) gets it from the controller.
func TestBundleTeardownFinalizerAddedByController(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	b := createBundle(t, ns, "stripped", objectResource(t, "settings", configMap("settings", map[string]any{"k": "v"}, nil)))
	waitReady(t, b)

	stripTeardownFinalizer(t, b)
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		cur := getBundle(t, b)
		if !slices.Contains(cur.Finalizers, limbov1alpha1.FinalizerTeardown) {
			return fmt.Errorf("finalizers %v, want %s added back by the controller", cur.Finalizers, limbov1alpha1.FinalizerTeardown)
		}
		if v, ok := cur.Annotations[limbov1alpha1.AnnotationTornDown]; ok {
			return fmt.Errorf("the finalizer back, %s %q stays: any write could take the finalizer away again", limbov1alpha1.AnnotationTornDown, v)
		}
		return nil
	})
}

// stripTeardownFinalizer removes b's teardown finalizer as a cluster without
// limbo's admission policies would let any write do: marked
// limbo.dev/tornDown set to its uid, the way to let go of a Bundle by hand
// that the policy lets through.
func stripTeardownFinalizer(t testing.TB, b *limbov1alpha1.Bundle) {
	t.Helper()
	cur := getBundle(t, b)
	strip := fmt.Sprintf(`[{"op":"test","path":"/metadata/finalizers","value":[%q]},{"op":"remove","path":"/metadata/finalizers"},`+
		`{"op":"add","path":"/metadata/annotations","value":{%q:%q}}]`, limbov1alpha1.FinalizerTeardown, limbov1alpha1.AnnotationTornDown, cur.UID)
	if err := env.Client.Patch(context.Background(), cur, client.RawPatch(types.JSONPatchType, []byte(strip))); err != nil {
		t.Fatalf("remove the finalizer: %v", err)
	}
	if slices.Contains(cur.Finalizers, limbov1alpha1.FinalizerTeardown) {
		t.Fatalf("the finalizer stays: %v", cur.Finalizers)
	}
}

// waitFinalizerPolicyActive waits until the API server applies the admission
// policy (it loads policies asynchronously after they are created): a server-side
// dry-run create of a Bundle in ns comes back with the finalizer.
func waitFinalizerPolicyActive(t *testing.T, ns string) {
	t.Helper()
	testenv.Eventually(t, time.Minute, func() error {
		probe := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"}, Spec: limbov1alpha1.BundleSpec{AllowEmpty: true}}
		if err := env.Client.Create(context.Background(), probe, client.DryRunAll); err != nil {
			return err
		}
		if !slices.Contains(probe.Finalizers, limbov1alpha1.FinalizerTeardown) {
			return fmt.Errorf("a dry-run create comes back with finalizers %v: the policy is not active yet", probe.Finalizers)
		}
		return nil
	})
}
