package it

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/it/testplugin"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// An object moved, in one edit, from a template into a generator whose changed
// spec takes long to plan is never an orphan. The generator's last plan is of
// its old spec, which did not make the object: a pass that took that plan as
// the generator's declaration found the object declared by nobody and deleted
// it at once (no delay), and the new plan then created it again, with a new
// UID. Until the plan of the changed spec is in, the generator is InProgress
// and the pass decides no orphan.
func TestObjectMovedIntoSlowGeneratorIsKept(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	external.Domain(ns) // the generator's first domain makes nothing
	next := external.Domain(ns + "-next")
	next.Generate(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "moved"}, "data": map[string]any{"k": "v"}}})
	t.Cleanup(func() { next.Unblock(testplugin.PlanCall) })
	b := createBundle(t, ns, "shop", objectResource(t, "moved", configMap("moved", map[string]any{"k": "v"}, nil)), pluginResource("gen", ns, ""))
	waitReady(t, b)
	uid := getObject(t, configMapGVK, ns, "moved").GetUID()

	next.Block(testplugin.PlanCall)
	updateBundle(t, b, pluginResource("gen", ns+"-next", ""))
	h := waitHang(t, next, testplugin.PlanCall, 1, 0)
	kept := func() error {
		o := getObject(t, configMapGVK, ns, "moved")
		switch {
		case o == nil:
			return fmt.Errorf("moved was deleted")
		case o.GetUID() != uid:
			return fmt.Errorf("moved was deleted and created again (uid %s, was %s)", o.GetUID(), uid)
		case o.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp] != "":
			return fmt.Errorf("moved is in limbo")
		}
		return nil
	}
	testenv.Consistently(t, 3*time.Second, kept)
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if cur.Status.ObservedGeneration != cur.Generation {
			return fmt.Errorf("observedGeneration %d, generation %d", cur.Status.ObservedGeneration, cur.Generation)
		}
		for _, st := range cur.Status.Resources {
			if st.Name == "gen" && st.State == limbov1alpha1.ResourceInProgress && st.Reason == limbov1alpha1.ReasonPlanning {
				return nil
			}
		}
		return fmt.Errorf("resources = %+v, want gen InProgress (Planning)", cur.Status.Resources)
	})
	h.still(t, "the check of the moved object ended")

	next.Unblock(testplugin.PlanCall)
	waitReady(t, b)
	if err := kept(); err != nil {
		t.Fatal(err)
	}
}

// An object moved, in one edit, from one generator to another while the first
// one's plan of its changed spec is slow belongs to the second at once: the
// first one's last plan (of its old spec) still lists it, but counts only for
// the orphan decisions — it used to make the second resource's declaration a
// DuplicateObject error until the slow plan was in.
func TestObjectMovedBetweenGeneratorsWhileOneIsSlow(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	moved := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "moved"}, "data": map[string]any{"k": "v"}}}
	external.Domain(ns + "-a").Generate(moved)
	external.Domain(ns + "-b") // makes nothing
	slowA := external.Domain(ns + "-a2")
	external.Domain(ns + "-b2").Generate(moved)
	t.Cleanup(func() { slowA.Unblock(testplugin.PlanCall) })
	b := createBundle(t, ns, "shop", pluginResource("a", ns+"-a", ""), pluginResource("b", ns+"-b", ""))
	waitReady(t, b)
	uid := getObject(t, configMapGVK, ns, "moved").GetUID()

	slowA.Block(testplugin.PlanCall)
	updateBundle(t, b, pluginResource("a", ns+"-a2", ""), pluginResource("b", ns+"-b2", ""))
	h := waitHang(t, slowA, testplugin.PlanCall, 1, 0)
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if cur.Status.ObservedGeneration != cur.Generation {
			return fmt.Errorf("observedGeneration %d, generation %d", cur.Status.ObservedGeneration, cur.Generation)
		}
		for _, st := range cur.Status.Resources {
			if st.Name == "b" && st.State != limbov1alpha1.ResourceReady {
				return fmt.Errorf("resource b is %s/%s: %s, want Ready", st.State, st.Reason, st.Message)
			}
		}
		return nil
	})
	testenv.Consistently(t, 2*time.Second, func() error {
		for _, st := range getBundle(t, b).Status.Resources {
			if st.Reason == limbov1alpha1.ReasonDuplicateObject {
				return fmt.Errorf("resource %s: %s", st.Name, st.Message)
			}
		}
		if o := getObject(t, configMapGVK, ns, "moved"); o == nil || o.GetUID() != uid {
			return fmt.Errorf("moved was deleted")
		}
		return nil
	})
	h.still(t, "the checks ended")
	slowA.Unblock(testplugin.PlanCall)
	waitReady(t, b)
}
