package it

import (
	"fmt"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugins/namespacegc"
)

// A plugin spec may take values from other resources (`!{name}` references, as
// DESIGN.md §2 allows for any resource). The external delete must see the same,
// resolved spec as the plan: here the endpoint comes from a ConfigMap.
func TestNamespaceGCSpecWithReferences(t *testing.T) {
	t.Parallel()
	f := newNSGCFixture(t)
	app := f.appNamespace(t, "nsgc-ref-", 0)

	config := objectResource(t, "storageos-config", configMap("storageos-config", map[string]any{"endpoint": f.url}, nil))
	gc := limbov1alpha1.Resource{
		Name:       nsgcResource,
		References: []limbov1alpha1.Reference{{Name: "endpoint", Resource: "storageos-config", Path: "data.endpoint", Example: &apiextensionsv1.JSON{Raw: []byte(`"http://storageos:5705"`)}}},
		Plugin: &limbov1alpha1.PluginResource{Name: namespacegc.Name, DeletionDelay: "1s", Spec: &apiextensionsv1.JSON{Raw: []byte(fmt.Sprintf(
			`{"storageos":{"endpoint":"!{endpoint}","credentialsSecretRef":{"name":%q}},"gcInterval":"1h","gcDelay":"0s"}`, nsgcSecret))}},
	}
	waitNSGCReady(t, createBundle(t, f.ns, "storage", config, gc), 2)
	f.orphan(t, app, "1s")
	f.waitBackendGone(t, app)
}

// A reference may fill a field that is not a plain string: here gcInterval, a
// duration. The spec is checked against the plugin's schema with the
// reference's example standing in for the marker (before, the marker itself
// failed the duration pattern: InvalidPluginSpec, Stalled), and again with the
// value read: a value that is no duration stops the plugin before it runs.
func TestNamespaceGCDurationFromAReference(t *testing.T) {
	t.Parallel()
	f := newNSGCFixture(t)
	gc := func(example string) limbov1alpha1.Resource {
		return limbov1alpha1.Resource{
			Name:       nsgcResource,
			References: []limbov1alpha1.Reference{{Name: "interval", Resource: "gc-config", Path: "data.interval", Example: &apiextensionsv1.JSON{Raw: []byte(example)}}},
			Plugin: &limbov1alpha1.PluginResource{Name: namespacegc.Name, DeletionDelay: "1h", Spec: &apiextensionsv1.JSON{Raw: []byte(fmt.Sprintf(
				`{"storageos":{"endpoint":%q,"credentialsSecretRef":{"name":%q}},"gcInterval":"!{interval}","gcDelay":"0s"}`, f.url, nsgcSecret))}},
		}
	}
	b := createBundle(t, f.ns, "storage", objectResource(t, "gc-config", configMap("gc-config", map[string]any{"interval": "1h"}, nil)), gc(`"10m"`))
	waitNSGCReady(t, b, len(f.sim.Namespaces()))

	bad := createBundle(t, f.ns, "bad-interval", objectResource(t, "gc-config", configMap("bad-gc-config", map[string]any{"interval": "soon"}, nil)), gc(`"10m"`))
	waitBundle(t, bad, func(cur *limbov1alpha1.Bundle) error {
		if err := resourceIs(cur, nsgcResource, limbov1alpha1.ResourceError, limbov1alpha1.ReasonInvalidPluginSpec); err != nil {
			return err
		}
		if msg := resourceStatus(cur, nsgcResource).Message; !strings.Contains(msg, "with its references resolved") || !strings.Contains(msg, `spec.gcInterval: Invalid value: "soon"`) {
			return fmt.Errorf("message %q does not name the resolved value that fails the schema", msg)
		}
		return nil
	})
}
