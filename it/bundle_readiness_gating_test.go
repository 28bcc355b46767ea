package it

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A CRD can state the readiness rule of its objects (Gadget: Ready when
// status.phase is Running). Its dependents wait until the rule holds; a
// value read from the dependency's live object flows into the dependent.
func TestReadinessGatingByCRDRule(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	b := createBundle(t, ns, "gadgets",
		objectResource(t, "engine", gadget("engine")),
		objectResource(t, "dash", configMap("dash", map[string]any{"engine": "phase=!{phase}"}, nil),
			limbov1alpha1.Reference{Name: "phase", Resource: "engine", Path: "status.phase"}),
	)
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if err := resourceMessageIs(cur, "engine", limbov1alpha1.ResourceInProgress, "FieldNotSet", "status.phase is not set"); err != nil {
			return err
		}
		return resourceMessageIs(cur, "dash", limbov1alpha1.ResourceBlocked, "DependenciesNotReady", `waiting for "engine"`)
	})

	setGadgetPhase(t, ns, "engine", "Pending")
	pending := func(cur *limbov1alpha1.Bundle) error {
		if err := resourceMessageIs(cur, "engine", limbov1alpha1.ResourceInProgress, "FieldValueMismatch", `status.phase is "Pending", waiting for "Running"`); err != nil {
			return err
		}
		if err := resourceMessageIs(cur, "dash", limbov1alpha1.ResourceBlocked, "DependenciesNotReady", `waiting for "engine"`); err != nil {
			return err
		}
		return conditionIs(cur, "Ready", metav1.ConditionFalse, "Progressing")
	}
	waitBundle(t, b, pending)
	testenv.Consistently(t, 2*time.Second, func() error {
		if err := noObject(configMapGVK, ns, "dash")(); err != nil {
			return err
		}
		return pending(getBundle(t, b))
	})

	setGadgetPhase(t, ns, "engine", "Running")
	// Event-driven: before any resync (30 min) or recheck interval (30 s), with
	// room for a loaded machine.
	testenv.Eventually(t, 25*time.Second, func() error {
		if getObject(t, configMapGVK, ns, "dash") == nil {
			return fmt.Errorf("ConfigMap dash not created after engine turned Running")
		}
		return nil
	})
	ready := waitReady(t, b)
	if err := resourceMessageIs(ready, "engine", limbov1alpha1.ResourceReady, "", `status.phase is "Running"`); err != nil {
		t.Error(err)
	}
	if got := stringField(getObject(t, configMapGVK, ns, "dash"), "data", "engine"); got != "phase=Running" {
		t.Errorf("dash data.engine = %q, want phase=Running (read from the live Gadget)", got)
	}

	// Readiness is live: the Gadget leaving Running makes the Bundle not Ready.
	setGadgetPhase(t, ns, "engine", "Degraded")
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if err := resourceMessageIs(cur, "engine", limbov1alpha1.ResourceInProgress, "FieldValueMismatch", `status.phase is "Degraded", waiting for "Running"`); err != nil {
			return err
		}
		return conditionIs(cur, "Ready", metav1.ConditionFalse, "Progressing")
	})
}

// Built-in kinds are read with kstatus: a Deployment (0 replicas: there is no
// scheduler or kubelet) is Ready once the deployment controller has observed it,
// and only then does its dependent go ahead.
func TestReadinessGatingByKstatus(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	b := createBundle(t, ns, "deploy",
		objectResource(t, "web", deployment("web", 0)),
		objectResource(t, "after", configMap("after", map[string]any{"observed": "generation !{gen}"}, nil),
			limbov1alpha1.Reference{Name: "gen", Resource: "web", Path: "status.observedGeneration"}),
	)
	ready := waitReady(t, b)
	if err := resourceIs(ready, "web", limbov1alpha1.ResourceReady, ""); err != nil {
		t.Error(err)
	}
	web := getObject(t, deploymentGVK, ns, "web")
	if og, _, _ := unstructured.NestedInt64(web.Object, "status", "observedGeneration"); og != web.GetGeneration() {
		t.Errorf("Deployment status.observedGeneration = %d, generation %d: Ready before the deployment controller observed it", og, web.GetGeneration())
	}
	want := fmt.Sprintf("generation %d", web.GetGeneration())
	if got := stringField(getObject(t, configMapGVK, ns, "after"), "data", "observed"); got != want {
		t.Errorf("after data.observed = %q, want %q", got, want)
	}
}

// A Deployment past its progress deadline (its pod never runs: the test cluster
// has no scheduler) is Failed to kstatus: the resource is Error with the
// Deployment's reason, the Bundle Stalled, a Warning event says so. Fixed (no
// replicas to wait for), the Bundle is Ready again.
func TestDeploymentPastItsProgressDeadlineIsAnError(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	web := func(replicas int64) limbov1alpha1.Resource {
		d := deployment("web", replicas)
		d["spec"].(map[string]any)["progressDeadlineSeconds"] = int64(1)
		return objectResource(t, "web", d)
	}
	b := createBundle(t, ns, "stuck", web(1))
	waitBundle(t, b, func(b *limbov1alpha1.Bundle) error {
		if err := resourceIs(b, "web", limbov1alpha1.ResourceError, "ProgressDeadlineExceeded"); err != nil {
			return err
		}
		if err := conditionIs(b, "Stalled", metav1.ConditionTrue, limbov1alpha1.ReasonResourceError); err != nil {
			return err
		}
		return conditionIs(b, "Ready", metav1.ConditionFalse, limbov1alpha1.ReasonResourceError)
	})
	waitEventContaining(t, b, "Warning", "ProgressDeadlineExceeded", `resource "web"`)

	updateBundle(t, b, web(0))
	waitReady(t, b)
}
