package it

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// A released object that a new Bundle of the same name adopts at its deadline
// minus ε, while the reaper holds an older list, is kept: same UID, controlled by
// the new Bundle, out of limbo.
//
// The reaper lists what is released and decides on that list. An interceptor of
// the controller's requests holds the reaper's first request about the due
// object while the new Bundle is created and adopts it (the Bundle's own requests
// pass): ahead of its fresh read (the reaper's list is then stale: the fresh read
// must see the new controller), or between its fresh read and its DELETE (the
// resourceVersion precondition must refuse the delete). A reaper that deletes
// its listed copy with a UID precondition only deletes the adopted object, and
// the new Bundle creates another.
func TestRaceAdoptionBeforeReaperDeadline(t *testing.T) {
	t.Parallel()
	forEachRacePoint(t, func(t *testing.T, ns string, point racePoint) {
		db := func() limbov1alpha1.Resource {
			return objectResource(t, "db", configMap("db", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: raceDelay}))
		}
		old := createBundle(t, ns, "reborn", db())
		old = waitReady(t, old)
		uid := string(getObject(t, configMapGVK, ns, "db").GetUID())

		var reborn limbov1alpha1.Bundle
		releasedAndDue := func(live *unstructured.Unstructured) error {
			if !softdelete.Released(live) {
				return fmt.Errorf("not released")
			}
			if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(old), &limbov1alpha1.Bundle{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("the old Bundle is still there (%v)", err)
			}
			return isDue(live)
		}
		race := raceConfigMapDelete(t, ns, "db", point, releasedAndDue, func(ctx context.Context) error {
			reborn = limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reborn"}, Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{db()}}}
			if err := env.Client.Create(ctx, &reborn); err != nil {
				return fmt.Errorf("create the new Bundle: %w", err)
			}
			return pollUntil(ctx, func() error {
				live := &unstructured.Unstructured{}
				live.SetGroupVersionKind(configMapGVK)
				if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, live); err != nil {
					return err
				}
				if owner := metav1.GetControllerOf(live); owner == nil || owner.UID != reborn.UID {
					return fmt.Errorf("db is not adopted by the new Bundle: owners %+v", live.GetOwnerReferences())
				}
				return nil
			})
		})

		deleteBundle(t, old, metav1.DeletePropagationBackground)
		race.wait(t, nil)

		b := waitReady(t, &reborn)
		noPendingDeletions(t, b)
		waitObject(t, configMapGVK, ns, "db", func(u *unstructured.Unstructured) error {
			if string(u.GetUID()) != uid {
				return fmt.Errorf("db has uid %s, want %s: it was deleted and created again", u.GetUID(), uid)
			}
			if err := isControlledBy(u, b); err != nil {
				return err
			}
			return notInLimbo(u)
		})
		race.checkDecidedOnFreshRead(t, point)
		testenv.Consistently(t, 2*time.Second, existsWithUID(t, configMapGVK, ns, "db", uid))
	})
}
