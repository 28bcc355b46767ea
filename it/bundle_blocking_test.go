package it

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A resource whose dependency is not Ready is Blocked, naming the dependency, and
// gets no write at all: its object is not created until the dependency turns
// Ready, and then it is created at once (the dependency's status change triggers
// the Bundle, not a resync).
func TestBlockedUntilDependencyReady(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	// A Widget without status is Ready (kstatus: Current), so the test starts from
	// one whose operator already reported Ready=False; the Bundle adopts it.
	createWidget(t, ns, "db", false)
	b := createBundle(t, ns, "blocking",
		objectResource(t, "app", configMap("app", map[string]any{"k": "v"}, nil),
			limbov1alpha1.Reference{Resource: "db"}),
		objectResource(t, "db", withAnnotations(widget("db"), map[string]any{limbov1alpha1.AnnotationAdopt: "true"})),
	)
	blocked := func(cur *limbov1alpha1.Bundle) error {
		if err := resourceMessageIs(cur, "app", limbov1alpha1.ResourceBlocked, "DependenciesNotReady", `waiting for "db"`); err != nil {
			return err
		}
		if err := resourceMessageIs(cur, "db", limbov1alpha1.ResourceInProgress, "Test", "Test: set by the test"); err != nil {
			return err
		}
		if err := conditionIs(cur, "Ready", metav1.ConditionFalse, "Progressing"); err != nil {
			return err
		}
		return conditionIs(cur, "Reconciling", metav1.ConditionTrue, "Progressing")
	}
	waitBundle(t, b, blocked)
	// The Widget was adopted: it is managed while app waits.
	if err := isControlledBy(getObject(t, widgetGVK, ns, "db"), getBundle(t, b)); err != nil {
		t.Error(err)
	}
	testenv.Consistently(t, 2*time.Second, func() error {
		if err := noObject(configMapGVK, ns, "app")(); err != nil {
			return fmt.Errorf("a Blocked resource was written: %w", err)
		}
		return blocked(getBundle(t, b))
	})

	setWidgetReady(t, ns, "db", true)
	// Event-driven: before any resync (30 min) or recheck interval (30 s; a
	// Blocked resource is not requeued at all), with room for a loaded machine.
	testenv.Eventually(t, 25*time.Second, func() error {
		if getObject(t, configMapGVK, ns, "app") == nil {
			return fmt.Errorf("ConfigMap app not created after its dependency turned Ready")
		}
		return nil
	})
	ready := waitReady(t, b)
	for _, name := range []string{"db", "app"} {
		if err := resourceIs(ready, name, limbov1alpha1.ResourceReady, ""); err != nil {
			t.Error(err)
		}
	}
	if err := isControlledBy(getObject(t, configMapGVK, ns, "app"), ready); err != nil {
		t.Error(err)
	}
}

// A chain blocks transitively: each resource waits for its direct dependencies
// only, and a resource waiting on a Blocked one is Blocked too.
func TestBlockedTransitively(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	createWidget(t, ns, "root", false)
	b := createBundle(t, ns, "chain",
		objectResource(t, "root", withAnnotations(widget("root"), map[string]any{limbov1alpha1.AnnotationAdopt: "true"})),
		objectResource(t, "mid", configMap("mid", map[string]any{"k": "v"}, nil), limbov1alpha1.Reference{Resource: "root"}),
		objectResource(t, "leaf", configMap("leaf", map[string]any{"k": "v"}, nil), limbov1alpha1.Reference{Resource: "mid"}),
		objectResource(t, "free", configMap("free", map[string]any{"k": "v"}, nil)),
	)
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if err := resourceMessageIs(cur, "mid", limbov1alpha1.ResourceBlocked, "DependenciesNotReady", `waiting for "root"`); err != nil {
			return err
		}
		if err := resourceMessageIs(cur, "leaf", limbov1alpha1.ResourceBlocked, "DependenciesNotReady", `waiting for "mid"`); err != nil {
			return err
		}
		if err := resourceIs(cur, "free", limbov1alpha1.ResourceReady, ""); err != nil {
			return err
		}
		if cur.Status.ResourcesReady != "1/4" {
			return fmt.Errorf("resourcesReady = %q, want 1/4", cur.Status.ResourcesReady)
		}
		return nil
	})
	testenv.Consistently(t, 2*time.Second, func() error {
		for _, name := range []string{"mid", "leaf"} {
			if err := noObject(configMapGVK, ns, name)(); err != nil {
				return err
			}
		}
		return nil
	})
	setWidgetReady(t, ns, "root", true)
	ready := waitReady(t, b)
	if ready.Status.ResourcesReady != "4/4" {
		t.Errorf("resourcesReady = %q, want 4/4", ready.Status.ResourcesReady)
	}
}

// A Blocked resource gets no write even when its object exists: a template
// change waits until the dependency is Ready again.
func TestBlockedResourceIsNotUpdated(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	db := objectResource(t, "db", widget("db"))
	app := func(v string) limbov1alpha1.Resource {
		return objectResource(t, "app", configMap("app", map[string]any{"v": v}, nil), limbov1alpha1.Reference{Resource: "db"})
	}
	b := createBundle(t, ns, "blocked-update", db, app("1"))
	waitReady(t, b)
	setWidgetReady(t, ns, "db", false)
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		return resourceIs(cur, "app", limbov1alpha1.ResourceBlocked, "DependenciesNotReady")
	})
	before := getObject(t, configMapGVK, ns, "app")

	updateBundle(t, b, db, app("2"))
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		return resourceMessageIs(cur, "app", limbov1alpha1.ResourceBlocked, "DependenciesNotReady", `waiting for "db"`)
	})
	testenv.Consistently(t, 2*time.Second, func() error {
		now := getObject(t, configMapGVK, ns, "app")
		if now == nil || now.GetResourceVersion() != before.GetResourceVersion() {
			return fmt.Errorf("a Blocked resource's object was written: %v", now)
		}
		return nil
	})

	setWidgetReady(t, ns, "db", true)
	waitReady(t, b)
	if got := stringField(getObject(t, configMapGVK, ns, "app"), "data", "v"); got != "2" {
		t.Errorf("app data.v = %q, want 2 once db is Ready", got)
	}
}
