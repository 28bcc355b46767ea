package it

import (
	"fmt"
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
