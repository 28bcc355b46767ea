package it

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugins/noderemoval"
)

// At the deadline a removed node's resources are deleted in the documented
// order, once each: Drives, AvailableCapacities, LogicalVolumeGroups and Volumes
// (their finalizers cleared first, so they go at once), the Csibmnode last, its
// finalizer kept for csi-baremetal's node controller: it stays terminating and
// listed until that finalizer goes.
func TestNodeRemovalDeadline(t *testing.T) {
	ns := env.Namespace(t)
	n := newCSINode(t, ns, "n1", drainTaint)
	b := nodeRemovalBundle(t, ns, "3s", map[string]any{})
	n.waitLabelled(t, true)
	env.ResetControllerRequests()
	deleteNode(t, n.name)

	for _, o := range n.objects[:4] {
		waitGone(t, o.GroupVersionKind(), o.GetNamespace(), o.GetName())
	}
	csibmnode := waitObject(t, noderemoval.GVK(noderemoval.KindCsibmnode), "", n.uuid, func(u *unstructured.Unstructured) error {
		if u.GetDeletionTimestamp() == nil {
			return fmt.Errorf("Csibmnode %s is not being deleted", n.uuid)
		}
		return nil
	})
	if got := csibmnode.GetFinalizers(); !reflect.DeepEqual(got, []string{noderemoval.FinalizerCsibmnode}) {
		t.Errorf("Csibmnode finalizers = %q, want its own kept", got)
	}
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if len(cur.Status.PendingDeletions) != 1 || cur.Status.PendingDeletions[0].Name != n.uuid ||
			!strings.Contains(cur.Status.PendingDeletions[0].Message, noderemoval.FinalizerCsibmnode) {
			return fmt.Errorf("pendingDeletions %+v, want only the terminating Csibmnode, naming its finalizer", cur.Status.PendingDeletions)
		}
		return nil
	})

	var deletes []string
	for _, r := range env.ControllerRequests(func(r testenv.Request) bool {
		return r.Method == http.MethodDelete && strings.Contains(r.Path, "/apis/"+noderemoval.Group+"/") && strings.Contains(r.Path, n.name)
	}) {
		parts := strings.Split(r.Path, "/")
		deletes = append(deletes, parts[len(parts)-2])
	}
	if want := []string{"drives", "availablecapacities", "logicalvolumegroups", "volumes", "nodes"}; !reflect.DeepEqual(deletes, want) {
		t.Errorf("deletes = %q, want %q", deletes, want)
	}

	// csi-baremetal's node controller clears its finalizer: the Csibmnode goes,
	// and so does the last entry.
	removeForGood(t, noderemoval.GVK(noderemoval.KindCsibmnode), "", n.uuid)
	noPendingDeletions(t, b)
}
