package it

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A failing apply goes back to the work queue: it counts in
// controller_runtime_reconcile_errors_total, and the controller's log names the
// Bundle, the resource and the object. A ValidatingAdmissionPolicy makes the API
// server refuse the ConfigMap.
func TestApplyFailureIsLoggedAndCounted(t *testing.T) {
	env.WithoutController(t)
	ns := env.Namespace(t)
	proc := env.ControllerProcess(t, "apply-failure", "--namespaces", ns, "--leader-elect=false")
	refused := &unstructured.Unstructured{Object: configMap("config", map[string]any{"k": "v"}, nil)}
	refused.SetNamespace(ns)
	refuseCreates(t, refused, "configmaps")
	b := createBundle(t, ns, "shop", objectResource(t, "config", configMap("config", map[string]any{"k": "v"}, nil)))
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		st := resourceStatus(cur, "config")
		if st == nil || st.State != limbov1alpha1.ResourceError || !strings.Contains(st.Message, "apply ConfigMap") {
			return fmt.Errorf("resource config: %+v, want an apply error", st)
		}
		return nil
	})
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		lines, err := logLines(proc.LogPath)
		if err != nil {
			return err
		}
		for _, line := range lines {
			str := func(k string) string { s, _ := line[k].(string); return s }
			if str("msg") == "apply failed" && str("bundle") == ns+"/shop" && str("resource") == "config" &&
				str("object") == "v1/ConfigMap "+ns+"/config" && strings.Contains(str("error"), "apply ConfigMap") {
				return nil
			}
		}
		return fmt.Errorf("no \"apply failed\" line with bundle, resource and object among %d lines", len(lines))
	})
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		samples, err := proc.Metrics(context.Background())
		if err != nil {
			return err
		}
		if n := samples.Sum("controller_runtime_reconcile_errors_total", map[string]string{"controller": "bundle"}); n < 1 {
			return fmt.Errorf("controller_runtime_reconcile_errors_total{controller=bundle} = %v", n)
		}
		return nil
	})
}
