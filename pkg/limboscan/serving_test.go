package limboscan

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// Serving tells a kind discovery lists at the very version, at another (its
// preferred one), or not at all, whatever its scope, and that it cannot tell when discovery failed
// for the kind's group (an aggregated API down) or altogether.
func TestServing(t *testing.T) {
	configMap := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	oldConfigMap := schema.GroupVersionKind{Version: "v0", Kind: "ConfigMap"}
	gadget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"}
	namespace := schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	down := func(gv schema.GroupVersion) error {
		return &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{gv: errors.New("503")}}
	}
	for _, tc := range []struct {
		name      string
		d         Discovery
		gvk       schema.GroupVersionKind
		wantExact bool
		wantAs    schema.GroupVersionKind
		wantKnown bool
	}{
		{"served at its version", fakeDiscovery{lists: lists()}, configMap, true, configMap, true},
		{"served at another version", fakeDiscovery{lists: lists()}, oldConfigMap, false, configMap, true},
		{"not served", fakeDiscovery{lists: lists()}, gadget, false, schema.GroupVersionKind{}, true},
		{"cluster-scoped, served", fakeDiscovery{lists: lists()}, namespace, true, namespace, true},
		{"another group down", fakeDiscovery{lists: lists(), err: down(schema.GroupVersion{Group: "metrics.k8s.io", Version: "v1beta1"})}, gadget, false, schema.GroupVersionKind{}, true},
		{"its group down", fakeDiscovery{lists: lists(), err: down(schema.GroupVersion{Group: "example.com", Version: "v2"})}, gadget, false, schema.GroupVersionKind{}, false},
		{"discovery failing", fakeDiscovery{err: errors.New("connection refused")}, configMap, false, schema.GroupVersionKind{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exact, as, known := Serving(tc.d, tc.gvk)
			if exact != tc.wantExact || as != tc.wantAs || known != tc.wantKnown {
				t.Errorf("Serving(%v) = (%v, %v, %v), want (%v, %v, %v)", tc.gvk, exact, as, known, tc.wantExact, tc.wantAs, tc.wantKnown)
			}
		})
	}
}
