package it

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/readiness"
)

// notOwnedMessage is the message of a resource whose object exists and is not
// limbo's to take.
const notOwnedMessage = `ConfigMap "taken" exists and is not managed by this Bundle; annotate the template with limbo.dev/adopt: "true" to adopt it`

// The adoption rules of DESIGN.md §3 step 4, one case each: an existing object is
// taken over only when it has no controller and either the template asks for it
// or the object is labelled with this Bundle's name; otherwise the resource is in
// Error and the object is not touched at all.
func TestAdoption(t *testing.T) {
	t.Parallel()
	// preexisting creates ConfigMap "taken" as someone else would have.
	preexisting := func(t *testing.T, ns string, labels map[string]string, owners []metav1.OwnerReference) *unstructured.Unstructured {
		obj := configMap("taken", map[string]any{"owner": "someone", "theirs": "x"}, nil)
		u := &unstructured.Unstructured{Object: obj}
		u.SetLabels(labels)
		u.SetOwnerReferences(owners)
		return createObject(t, ns, u.Object)
	}
	template := func(annotations map[string]any) map[string]any {
		return configMap("taken", map[string]any{"owner": "limbo"}, annotations)
	}
	adopted := func(t *testing.T, b *limbov1alpha1.Bundle, before *unstructured.Unstructured) *unstructured.Unstructured {
		t.Helper()
		ready := waitReady(t, b)
		after := getObject(t, configMapGVK, before.GetNamespace(), "taken")
		if after.GetUID() != before.GetUID() {
			t.Errorf("the object was re-created (uid %s, was %s), want it adopted", after.GetUID(), before.GetUID())
		}
		if err := isControlledBy(after, ready); err != nil {
			t.Error(err)
		}
		if got := stringField(after, "data", "owner"); got != "limbo" {
			t.Errorf("data.owner = %q, want the template's limbo", got)
		}
		if st := resourceStatus(ready, "taken"); st == nil || st.Object == nil || st.Object.UID != string(before.GetUID()) {
			t.Errorf("resource status %+v, want the adopted object's uid %s", st, before.GetUID())
		}
		waitEvent(t, b, corev1.EventTypeNormal, "Adopted", `resource "taken": ConfigMap taken adopted`)
		return after
	}

	t.Run("no controller, no label: NotOwned, untouched", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		before := preexisting(t, ns, nil, nil)
		b := createBundle(t, ns, "adopt", objectResource(t, "taken", template(nil)))
		waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
			if err := resourceMessageIs(cur, "taken", limbov1alpha1.ResourceError, "NotOwned", notOwnedMessage); err != nil {
				return err
			}
			return conditionMessageIs(cur, "Stalled", metav1.ConditionTrue, "ResourceError", `resource "taken": `+notOwnedMessage)
		})
		untouched(t, before)
		waitEvent(t, b, corev1.EventTypeWarning, "NotOwned", `resource "taken": `+notOwnedMessage)

		// Once the conflicting object is gone, limbo creates its own. Nothing
		// announces that deletion (the object was never labelled): the periodic
		// recheck of conflicts (30s) finds it.
		deleteObject(t, before)
		testenv.Eventually(t, 60*time.Second, func() error {
			u := getObject(t, configMapGVK, ns, "taken")
			if u == nil || u.GetUID() == before.GetUID() {
				return fmt.Errorf("limbo has not created its own ConfigMap taken yet")
			}
			return isControlledBy(u, getBundle(t, b))
		})
		waitReady(t, b)
	})

	t.Run("no controller, adopt annotation: adopted", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		before := preexisting(t, ns, nil, nil)
		b := createBundle(t, ns, "adopt", objectResource(t, "taken", template(map[string]any{limbov1alpha1.AnnotationAdopt: "true"})))
		after := adopted(t, b, before)
		// Server-side apply takes over the fields limbo sets and leaves the others.
		if got := stringField(after, "data", "theirs"); got != "x" {
			t.Errorf("data.theirs = %q: a field limbo does not set was changed", got)
		}
	})

	t.Run("controlled by another owner: ControlledByOther, untouched", func(t *testing.T) {
		for _, tc := range []struct {
			name        string
			labels      map[string]string
			annotations map[string]any
		}{
			{name: "plain"},
			// Neither the adopt annotation nor this Bundle's label lets limbo take an
			// object that has a controller.
			{name: "even with adopt and the Bundle's label", labels: map[string]string{limbov1alpha1.LabelBundle: "adopt"}, annotations: map[string]any{limbov1alpha1.AnnotationAdopt: "true"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				ns := env.Namespace(t)
				boss := createObject(t, ns, configMap("boss", nil, nil))
				before := preexisting(t, ns, tc.labels, []metav1.OwnerReference{{
					APIVersion: "v1", Kind: "ConfigMap", Name: "boss", UID: boss.GetUID(), Controller: ptr.To(true),
				}})
				b := createBundle(t, ns, "adopt", objectResource(t, "taken", template(tc.annotations)))
				msg := `ConfigMap "taken" exists and is controlled by ConfigMap "boss"`
				waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
					if err := resourceMessageIs(cur, "taken", limbov1alpha1.ResourceError, "ControlledByOther", msg); err != nil {
						return err
					}
					return conditionIs(cur, "Stalled", metav1.ConditionTrue, "ResourceError")
				})
				untouched(t, before)
				waitEvent(t, b, corev1.EventTypeWarning, "ControlledByOther", `resource "taken": `+msg)
			})
		}
	})

	t.Run("no controller, labelled with this Bundle's name: adopted", func(t *testing.T) {
		t.Parallel()
		// Left in limbo by an earlier Bundle of the same name: labelled, released
		// (no owner), stamped. The new Bundle takes it back and cancels the countdown.
		ns := env.Namespace(t)
		obj := configMap("taken", map[string]any{"owner": "someone"}, map[string]any{
			limbov1alpha1.AnnotationDeletionDelay:     "1h",
			limbov1alpha1.AnnotationDeletionTimestamp: time.Now().UTC().Format(time.RFC3339),
		})
		obj["metadata"].(map[string]any)["labels"] = map[string]any{limbov1alpha1.LabelBundle: "adopt", limbov1alpha1.LabelPendingDeletion: "true"}
		before := createObject(t, ns, obj)
		b := createBundle(t, ns, "adopt", objectResource(t, "taken", template(map[string]any{limbov1alpha1.AnnotationDeletionDelay: "1h"})))
		after := adopted(t, b, before)
		if _, stamped := after.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp]; stamped {
			t.Errorf("annotations = %v: the countdown was not cancelled", after.GetAnnotations())
		}
		if _, pending := after.GetLabels()[limbov1alpha1.LabelPendingDeletion]; pending {
			t.Errorf("labels = %v: the countdown was not cancelled", after.GetLabels())
		}
		if ready := getBundle(t, b); len(ready.Status.PendingDeletions) != 0 {
			t.Errorf("pendingDeletions = %+v, want none", ready.Status.PendingDeletions)
		}
	})

	t.Run("no controller, labelled with another Bundle's name: NotOwned, untouched", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		before := preexisting(t, ns, map[string]string{limbov1alpha1.LabelBundle: "other"}, nil)
		b := createBundle(t, ns, "adopt", objectResource(t, "taken", template(nil)))
		waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
			return resourceMessageIs(cur, "taken", limbov1alpha1.ResourceError, "NotOwned", notOwnedMessage)
		})
		untouched(t, before)
	})
}

// untouched checks for a while that the ConfigMap before is exactly as its
// creator left it: neither written nor deleted.
func untouched(t testing.TB, before *unstructured.Unstructured) {
	t.Helper()
	testenv.Consistently(t, 2*time.Second, func() error {
		now := getObject(t, configMapGVK, before.GetNamespace(), before.GetName())
		if now == nil {
			return fmt.Errorf("%s %s was deleted", before.GetKind(), before.GetName())
		}
		if now.GetResourceVersion() != before.GetResourceVersion() {
			return fmt.Errorf("%s %s was written: resourceVersion %s, was %s; now %v", before.GetKind(), before.GetName(), now.GetResourceVersion(), before.GetResourceVersion(), now.Object)
		}
		return nil
	})
}

// deleteObject deletes u, with its UID as precondition.
func deleteObject(t testing.TB, u *unstructured.Unstructured) {
	t.Helper()
	uid := u.GetUID()
	if err := env.Client.Delete(testenv.Context(t, testenv.DefaultTimeout), u, &client.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
		t.Fatalf("delete %s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

// Generated objects found in the way are read, not created, at each pass while
// they stay (objectsInTheWay), also when the generator's status tells the state
// of another of its objects (a Gadget not Ready, last); that never holds back
// their apply: the one labelled as the Bundle's is adopted, and the one
// deleted is created, by the pass the label's event brings.
func TestGeneratorObjectsInTheWayAreTakenOnceFree(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	labelled := createObject(t, ns, configMap("gen-labelled", map[string]any{"owner": "someone"}, nil))
	deleted := createObject(t, ns, configMap("gen-deleted", map[string]any{"owner": "someone"}, nil))
	external.Domain(ns).Generate(generated(configMap("gen-labelled", map[string]any{"owner": "limbo"}, nil)),
		generated(configMap("gen-deleted", map[string]any{"owner": "limbo"}, nil)), generated(gadget("gen-waiting")))
	b := createBundle(t, ns, "adopt", pluginResource("gen", ns, "1h"))
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		// The Gadget's state: the pass got past both ConfigMaps before it.
		return resourceIs(cur, "gen", limbov1alpha1.ResourceInProgress, readiness.ReasonFieldNotSet)
	})
	untouched(t, labelled)
	untouched(t, deleted)

	deleteObject(t, deleted)
	addLabel(t, configMapGVK, ns, "gen-labelled", limbov1alpha1.LabelBundle, "adopt")
	owner := getBundle(t, b)
	for _, name := range []string{"gen-labelled", "gen-deleted"} {
		waitObject(t, configMapGVK, ns, name, func(u *unstructured.Unstructured) error {
			if got := stringField(u, "data", "owner"); got != "limbo" {
				return fmt.Errorf("%s: data.owner = %q, want the plugin's limbo", name, got)
			}
			return isControlledBy(u, owner)
		})
	}
	if after := getObject(t, configMapGVK, ns, "gen-labelled"); after.GetUID() != labelled.GetUID() {
		t.Errorf("ConfigMap gen-labelled was created again (uid %s), not adopted (uid %s)", after.GetUID(), labelled.GetUID())
	}
}
