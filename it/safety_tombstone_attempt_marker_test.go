package it

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// A cancel that lands after the Tombstone controller's fenced reads, just before
// it marks the attempt, wins: the external delete is never run.
//
// The Tombstone is made due once the race is armed. An interceptor of the
// controller's requests holds the attempt marker (the status write of the due
// Tombstone) while the item is made desired again and the Bundle's pass cancels
// the Tombstone; the marker is then sent, guarded by the resourceVersion the
// controller read, and fails. A controller that calls the plugin without
// writing a guarded marker first deletes the item.
func TestTombstoneCancelBeforeAttemptMarker(t *testing.T) {
	t.Parallel()
	items := newExternalItems(t)
	ns, domain := items.ns, items.domain
	b, ts := items.orphan(t, "shop", "1h")

	path := "/apis/" + limbov1alpha1.GroupVersion.String() + "/namespaces/" + ns + "/tombstones/" + ts.Name + "/status"
	key := client.ObjectKeyFromObject(&ts)
	due := func(ctx context.Context) error {
		var live limbov1alpha1.Tombstone
		if err := env.Client.Get(ctx, key, &live); err != nil {
			return err
		}
		if d := softdelete.Decide(time.Now(), softdelete.State{Annotations: live.Annotations, PendingLabel: true}); d.Action != softdelete.ActionDelete {
			return fmt.Errorf("not due: a status write of the countdown, not the marker")
		}
		return nil
	}
	race := raceRequest(t, path, []string{http.MethodPatch}, due, func(ctx context.Context) error {
		return desireAgainAndWaitCancelled(ctx, domain.Set, b, ts)
	})

	// Due now, once the race is armed (as `kubectl limbo expedite` makes it).
	expedite := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, limbov1alpha1.AnnotationDeletionTimestamp, softdelete.FormatStamp(time.Now().Add(-time.Hour)))
	// A copy: the closures above read ts on the controller's goroutines while
	// Patch decodes the answer into its argument.
	if err := env.Client.Patch(context.Background(), ts.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(expedite))); err != nil {
		t.Fatal(err)
	}

	landed := race.wait(t, func() bool { return domain.Deletes("orphan") > 0 })
	if err := items.untouched("orphan")(); err != nil {
		t.Fatalf("the external delete ran, though a cancel was to land before its attempt marker: %v", err)
	}
	if !landed {
		t.Fatal("the cancel did not land")
	}
	testenv.Consistently(t, 2*time.Second, items.untouched("orphan"))
	noPendingDeletions(t, b)
}

// desireAgainAndWaitCancelled makes item "orphan" desired again, has the Bundle
// plan again (a spec field the test plugin ignores), and waits until the
// Bundle's pass removed the Tombstone ts. It calls no t method: it runs on the
// controller's goroutine.
func desireAgainAndWaitCancelled(ctx context.Context, set func(id string, desired bool), b *limbov1alpha1.Bundle, ts limbov1alpha1.Tombstone) error {
	set("orphan", true)
	err := pollUntil(ctx, func() error {
		var cur limbov1alpha1.Bundle
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(b), &cur); err != nil {
			return err
		}
		res := cur.Spec.Resources[0].Plugin
		spec := map[string]any{}
		if err := json.Unmarshal(res.Spec.Raw, &spec); err != nil {
			return err
		}
		spec["replan"] = "desired again"
		raw, err := json.Marshal(spec)
		if err != nil {
			return err
		}
		res.Spec = &apiextensionsv1.JSON{Raw: raw}
		return env.Client.Update(ctx, &cur)
	})
	if err != nil {
		return fmt.Errorf("replan: %w", err)
	}
	return pollUntil(ctx, func() error {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(&ts), &limbov1alpha1.Tombstone{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("the Tombstone is still there (%v)", err)
	})
}
