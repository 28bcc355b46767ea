package it

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// An object its Bundle controls whose limbo.dev/bundle label a user removed
// (`kubectl label configmap db limbo.dev/bundle-`) while its resource waits
// for a dependency — Blocked, nothing re-applies it — is in no listing of the
// Bundle's. Deleted, the Bundle went without it, and the garbage collector,
// which goes by the owner reference alone, deleted it at once, its 1h delay
// ignored. The teardown finds it by name from the status, puts the label back
// (a Relabelled event) and releases it with its delay, as the others.
func TestTeardownFindsAnObjectThatLostItsLabel(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	b := createBundle(t, ns, "unlabelled",
		objectResource(t, "gate", widget("gate")),
		objectResource(t, "db", configMap("db", map[string]any{"k": "v"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: "1h"}),
			limbov1alpha1.Reference{Resource: "gate"}))
	setWidgetReady(t, ns, "gate", true)
	waitReady(t, b)
	setWidgetReady(t, ns, "gate", false)
	waitBundle(t, b, func(b *limbov1alpha1.Bundle) error { return resourceIs(b, "db", limbov1alpha1.ResourceBlocked, "") })
	patchObject(t, configMapGVK, ns, "db", `{"metadata":{"labels":{"`+limbov1alpha1.LabelBundle+`":null}}}`)

	deleteBundle(t, b, metav1.DeletePropagationBackground)
	waitEventContaining(t, b, corev1.EventTypeNormal, limbov1alpha1.EventRelabelled, "ConfigMap db: put back its "+limbov1alpha1.LabelBundle+" label")
	waitBundleGone(t, b)
	testenv.Consistently(t, 3*time.Second, func() error { // the garbage collector would have acted by then
		db := getObject(t, configMapGVK, ns, "db")
		switch {
		case db == nil:
			return fmt.Errorf("ConfigMap db is gone: deleted at once, its 1h delay ignored")
		case metav1.GetControllerOf(db) != nil:
			return fmt.Errorf("ConfigMap db is still controlled by %v after its Bundle went", metav1.GetControllerOf(db))
		case db.GetLabels()[limbov1alpha1.LabelBundle] != "unlabelled" || db.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp] == "":
			return fmt.Errorf("ConfigMap db: labels %v, annotations %v; want its label back and its countdown started", db.GetLabels(), db.GetAnnotations())
		}
		return nil
	})
}
