package bundle

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/pkg/apiconflict"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// createOnlyVersion is the resourceVersion precondition of a create-only apply.
// The API server checks a precondition only against an existing object, and no
// object has this version (etcd revisions are counted from 1 and never reach it):
// a server-side apply that carries it creates the object when there is none, with
// the same managedFields entry as any apply of limbo's, and is refused with a
// Conflict when there is one, which it leaves untouched
// (docs/design-decisions.md).
const createOnlyVersion = "9223372036854775807"

// apply server-side applies desired as limbo (force: limbo's fields are limbo's)
// and leaves the API server's answer in desired.
//
// An object of a kind cached as metadata only (ConfigMaps, Secrets; see
// metadataOnly) is answered with its metadata only, as the cache would hold it,
// unless withBody: nothing limbo decides reads its body, which only a reference
// reads (bodies). Decoding those bodies was a tenth of the controller's CPU while
// Bundles converge, and a Secret's data then never reaches limbo's memory.
func (r *Reconciler) apply(ctx context.Context, desired *unstructured.Unstructured, withBody bool) error {
	gvk := desired.GroupVersionKind()
	if withBody || !metadataOnly(gvk) {
		return r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(desired), client.FieldOwner(limbov1alpha1.FieldManager), client.ForceOwnership)
	}
	data, err := json.Marshal(desired.Object)
	if err != nil {
		return err
	}
	answer := &metav1.PartialObjectMetadata{}
	answer.SetGroupVersionKind(gvk)
	answer.SetNamespace(desired.GetNamespace())
	answer.SetName(desired.GetName())
	if err := r.Client.Patch(ctx, answer, client.RawPatch(types.ApplyPatchType, data), client.FieldOwner(limbov1alpha1.FieldManager), client.ForceOwnership); err != nil {
		return err
	}
	u, err := asUnstructured(answer, gvk)
	if err != nil {
		return err
	}
	desired.Object = u.Object
	return nil
}

// createOnly applies desired only if no object of its name exists, and reports
// whether it created it (desired then holds the API server's answer, as apply
// leaves it). It returns false, and no error, when an object exists.
func (r *Reconciler) createOnly(ctx context.Context, desired *unstructured.Unstructured, withBody bool) (bool, error) {
	desired.SetResourceVersion(createOnlyVersion)
	err := r.apply(ctx, desired, withBody)
	switch {
	case apiconflict.Is(err):
		desired.SetResourceVersion("")
		return false, nil
	case err != nil:
		desired.SetResourceVersion("")
		return false, err
	}
	return true, nil
}

// appliedChange is one write of a managed object in a pass.
type appliedChange struct {
	resource, kind, name string
	// event is the reason of an event about this change alone: Created, Updated
	// or Adopted.
	event string
}

func (c *appliedChange) verb() string { return strings.ToLower(c.event) }

func (c *appliedChange) String() string {
	return fmt.Sprintf("resource %q: %s %s %s", c.resource, c.kind, c.name, c.verb())
}

// maxChangesInEvent bounds the changes an Applied event names.
const maxChangesInEvent = 20

// emitAppliedEvent sums up the pass's writes of managed objects in one event, in
// plan order: its reason is Created, Updated or Adopted when every change is of
// that kind, else Applied. Stamps, cancels and deletions keep an event each.
func (p *pass) emitAppliedEvent(changes []*appliedChange) {
	if len(changes) == 0 {
		return
	}
	reason := sharedReason(len(changes), func(i int) string { return changes[i].event }, limbov1alpha1.EventApplied)
	var parts []string
	for _, c := range changes[:min(len(changes), maxChangesInEvent)] {
		parts = append(parts, c.String())
	}
	if more := len(changes) - maxChangesInEvent; more > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", more))
	}
	p.announce(corev1.EventTypeNormal, reason, "%s", strings.Join(parts, "; "))
}

// sharedReason is the reason of an event that sums up n things: the one
// reasonOf gives each of them when they all have the same, mixed otherwise.
func sharedReason(n int, reasonOf func(i int) string, mixed string) string {
	for i := 1; i < n; i++ {
		if reasonOf(i) != reasonOf(0) {
			return mixed
		}
	}
	if n == 0 {
		return mixed
	}
	return reasonOf(0)
}
