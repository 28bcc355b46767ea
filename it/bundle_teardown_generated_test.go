package it

import (
	"fmt"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugins/configmap"
)

// A teardown deletes an object a generator plugin made in its plugin resource's
// wave: after the objects that depend on it (here a ConfigMap held Terminating by
// the test's finalizer), not before everything else as an undeclared object.
func TestTeardownGeneratedObjectAfterItsDependents(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	b := createBundle(t, ns, "generated",
		limbov1alpha1.Resource{Name: "settings", Plugin: &limbov1alpha1.PluginResource{Name: configmap.Name,
			Spec: &apiextensionsv1.JSON{Raw: []byte(`{"name":"app-settings","data":{"LOG_LEVEL":"info"}}`)}}},
		objectResource(t, "app", configMap("app", map[string]any{"k": "v"}, nil), limbov1alpha1.Reference{Resource: "settings"}))
	waitReady(t, b)
	if getObject(t, configMapGVK, ns, "app-settings") == nil {
		t.Fatal("the generated ConfigMap app-settings does not exist")
	}
	release := holdConfigMap(t, ns, "app")

	deleteBundle(t, b, metav1.DeletePropagationBackground)
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if app := getObject(t, configMapGVK, ns, "app"); app == nil || app.GetDeletionTimestamp() == nil {
			return fmt.Errorf("ConfigMap app is not being deleted")
		}
		return nil
	})
	testenv.Consistently(t, 2*time.Second, func() error {
		if s := getObject(t, configMapGVK, ns, "app-settings"); s == nil || s.GetDeletionTimestamp() != nil {
			return fmt.Errorf("the generated ConfigMap app-settings went before app, which depends on it")
		}
		return nil
	})
	release()
	waitGone(t, configMapGVK, ns, "app-settings")
	waitBundleGone(t, b)
}
