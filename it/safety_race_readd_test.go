package it

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// The object declared again in its Bundle just as its deadline comes is kept: the
// re-add lands once the object is due, ahead of the controller's first request
// about it, so the pass that is deleting it decided on a Bundle that no longer
// holds. The engine reads the Bundle again right before the delete and leaves the
// object to the pass that sees the new spec, which takes it out of limbo.
//
// The soak found this (seed 878847447: a re-add 44 ms before the delete lost). A
// controller that checks only the object on its fresh read deletes it: a re-add
// changes the Bundle, not the object. The one window left is between the Bundle's
// read and the DELETE, as no precondition spans two objects.
func TestRaceReAddBeforeDeadline(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	b, keep, uid := countdownBundle(t, ns)
	db := objectResource(t, "db", configMap("db", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: raceDelay}))
	race := raceConfigMapDelete(t, ns, "db", beforeFreshRead, nil, func(ctx context.Context) error {
		return pollUntil(ctx, func() error {
			var cur limbov1alpha1.Bundle
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(b), &cur); err != nil {
				return err
			}
			cur.Spec.Resources = []limbov1alpha1.Resource{keep, db}
			return env.Client.Update(ctx, &cur)
		})
	})

	updateBundle(t, b, keep)
	waitInLimbo(t, configMapGVK, ns, "db")
	race.wait(t, nil)

	waitObject(t, configMapGVK, ns, "db", func(live *unstructured.Unstructured) error {
		if string(live.GetUID()) != uid {
			return fmt.Errorf("db was re-created (uid %s, was %s): the re-added object was deleted", live.GetUID(), uid)
		}
		return notInLimbo(live)
	})
	race.checkDecidedOnFreshRead(t, beforeFreshRead)
	testenv.Consistently(t, 2*time.Second, existsWithUID(t, configMapGVK, ns, "db", uid))
	waitReady(t, b)
}
