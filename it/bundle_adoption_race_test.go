package it

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// An object another adopter takes between limbo's read and its adopting apply
// stays that adopter's: the apply carries the resourceVersion the adoption was
// decided on, and the API server refuses it (Conflict); the next pass finds the
// object ControlledByOther. The other adopter here applies as limbo's field
// manager, as another Bundle's pass does: without the precondition, limbo's
// apply dropped that owner reference and those fields as its own and took the
// object over.
func TestAdoptionRacesAnotherAdopter(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	boss := createObject(t, ns, configMap("boss", nil, nil))
	createObject(t, ns, configMap("taken", map[string]any{"owner": "someone"}, nil))
	path := "/api/v1/namespaces/" + ns + "/configmaps/taken"
	var fired atomic.Bool
	env.InterceptController(t, func(req *http.Request, send func(*http.Request) (*http.Response, error)) (*http.Response, error) {
		if req.Method != http.MethodPatch || req.URL.Path != path || req.Body == nil {
			return send(req)
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		var applied metav1.PartialObjectMetadata
		if json.Unmarshal(body, &applied) == nil && applied.ResourceVersion != "9223372036854775807" && fired.CompareAndSwap(false, true) {
			// The adopting apply (not the create-only one): another adopter,
			// applying as limbo, takes the object first.
			other := &unstructured.Unstructured{Object: configMap("taken", map[string]any{"owner": "boss"}, nil)}
			other.SetNamespace(ns)
			other.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "boss", UID: boss.GetUID(), Controller: ptr.To(true)}})
			if err := env.Client.Apply(req.Context(), client.ApplyConfigurationFromUnstructured(other), client.FieldOwner(limbov1alpha1.FieldManager), client.ForceOwnership); err != nil {
				t.Errorf("the other adopter's apply: %v", err)
			}
		}
		return send(req)
	})

	b := createBundle(t, ns, "adopt", objectResource(t, "taken", configMap("taken", map[string]any{"owner": "limbo"}, map[string]any{limbov1alpha1.AnnotationAdopt: "true"})))
	msg := `ConfigMap "taken" exists and is controlled by ConfigMap "boss"`
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		return resourceMessageIs(cur, "taken", limbov1alpha1.ResourceError, "ControlledByOther", msg)
	})
	if !fired.Load() {
		t.Fatal("the other adopter never raced limbo's adopting apply")
	}
	after := getObject(t, configMapGVK, ns, "taken")
	if owner := metav1.GetControllerOf(after); owner == nil || owner.UID != boss.GetUID() {
		t.Errorf("taken is controlled by %+v, want the other adopter", owner)
	}
	if got := stringField(after, "data", "owner"); got != "boss" {
		t.Errorf("data.owner = %q, want the other adopter's boss", got)
	}
	var events corev1.EventList
	if err := env.Client.List(context.Background(), &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Reason == limbov1alpha1.EventAdopted {
			t.Errorf("an Adopted event: %s", e.Message)
		}
	}
}
