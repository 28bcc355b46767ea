package it

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// When the Tombstone controller cannot read the Tombstone's Bundle, the external
// delete is not run (fail closed), however often it retries: neither for a due
// Tombstone nor for one the user deleted. Once the Bundle can be read again, the
// item is deleted: the read error alone held it.
//
// The read error is the real API server's: an interceptor of the controller's
// requests sends its GET of the Bundle as a user without any permission
// (Impersonate-User), and the API server answers 403 Forbidden. Only the
// Tombstone controller's fenced read GETs a Bundle from the API server (the
// Bundle controller reads its cache), so every refused GET is that read.
func TestTombstoneFailsClosedOnBundleReadError(t *testing.T) {
	t.Parallel()
	t.Run("due", func(t *testing.T) {
		t.Parallel()
		tc := tombstoneWithBundleReadsRefused(t, "2s")
		tc.heldWhileRefused(t)
		d := softdelete.Decide(time.Now(), softdelete.State{Annotations: tc.ts.Annotations, PendingLabel: true})
		if first := tc.refused.first(); d.Action != softdelete.ActionDelete || first.Before(d.Deadline) {
			t.Fatalf("the Tombstone was not due when its Bundle's read was refused (%s at %s, deadline %s)", d.Action, first, d.Deadline)
		}
		tc.deletedOnceLifted(t)
	})
	t.Run("forced", func(t *testing.T) {
		t.Parallel()
		tc := tombstoneWithBundleReadsRefused(t, "1h")
		if err := env.Client.Delete(context.Background(), &tc.ts); err != nil {
			t.Fatal(err)
		}
		tc.heldWhileRefused(t)
		if tc.ts.DeletionTimestamp == nil {
			t.Fatalf("the Tombstone is not being deleted")
		}
		tc.deletedOnceLifted(t)
	})
}

// refusedTombstone is a Tombstone whose controller cannot read its Bundle.
type refusedTombstone struct {
	*externalItems
	refused *requestRefusal
	ts      limbov1alpha1.Tombstone
}

// tombstoneWithBundleReadsRefused refuses the controller's reads of Bundle
// "shop", creates it with a plugin resource of delay that orphans item
// "orphan", and waits for the item's Tombstone.
func tombstoneWithBundleReadsRefused(t *testing.T, delay string) *refusedTombstone {
	t.Helper()
	items := newExternalItems(t)
	tc := &refusedTombstone{externalItems: items, refused: refuseBundleReads(t, items.ns, "shop")}
	_, tc.ts = items.orphan(t, "shop", delay)
	return tc
}

// heldWhileRefused waits until the controller retried its refused read of the
// Bundle (or deleted the item), checks that the item is untouched, and reads
// the Tombstone again.
func (tc *refusedTombstone) heldWhileRefused(t *testing.T) {
	t.Helper()
	tc.refused.waitRefused(t, "three reads of the Bundle (retries after a refusal), or the item's delete", func(reads []string) bool {
		return len(reads) >= 3 || tc.domain.Deletes("orphan") > 0
	})
	if err := tc.untouched("orphan")(); err != nil {
		t.Fatalf("the item was deleted while its Bundle could not be read: %v", err)
	}
	tc.ts = waitOneTombstone(t, tc.ns, "orphan")
}

// deletedOnceLifted lets the reads through, touches the Tombstone so that the
// controller looks at it at once (not when its backoff after the refusals
// ends), and waits until the item and its Tombstone are gone: the refusal alone
// held them.
func (tc *refusedTombstone) deletedOnceLifted(t *testing.T) {
	t.Helper()
	tc.refused.lift()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"test.limbo.dev/poke":%q}}}`, time.Now().Format(time.RFC3339Nano))
	if err := env.Client.Patch(context.Background(), &tc.ts, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("touch Tombstone %s: %v", tc.ts.Name, err)
	}
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if tc.domain.Exists("orphan") {
			return fmt.Errorf("the item still exists once its Bundle can be read")
		}
		return nil
	})
	testenv.Eventually(t, testenv.DefaultTimeout, noTombstones(t, tc.ns))
}

// refuseBundleReads refuses the in-process controller's GETs of Bundle ns/name
// (see requestRefusal).
func refuseBundleReads(t *testing.T, ns, name string) *requestRefusal {
	t.Helper()
	path := "/apis/" + limbov1alpha1.GroupVersion.String() + "/namespaces/" + ns + "/bundles/" + name
	return refuseRequests(t, func(req *http.Request) bool { return req.Method == http.MethodGet && req.URL.Path == path })
}
