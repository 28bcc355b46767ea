package softdelete

import (
	"context"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// DoomedOwners are the owners of obj, an object of the Bundle named bundle in
// obj's namespace, that would have the garbage collector delete obj once the
// Bundle lets go of it (a release, kubectl limbo cancel) — by UID, with why
// each is doomed. The collector deletes an object whose owners are all gone,
// whatever its delay: while the Bundle controls obj, its owner reference is one
// that exists; once it goes, these would be all that is left:
//
//   - the Bundle's other objects (labelled limbo.dev/bundle=bundle, released ones
//     included), which a template may name as owner (its uid read by a
//     reference): the Bundle deletes them when they leave it or it goes, or the
//     reaper at their deadlines;
//   - owners that are gone (not found, or another object of the name now),
//     which the collector has not yet struck off (a teardown's earlier wave
//     deleted them a moment ago).
//
// The Bundle's own references (kind Bundle of limbo.dev) are not read: the
// caller removes what it removes of them. An owner of a kind the API server
// does not serve is kept (the collector cannot tell either, and keeps obj); one
// that cannot be read is an error: nothing is decided on a guess. Owners
// outside the Bundle that exist stay owners: the collector deletes obj when
// they go, as their owner references say. reader reads owners (metadata only,
// from the API server, where it matters that a deletion a moment ago shows);
// mapper tells the kinds served.
func DoomedOwners(ctx context.Context, reader client.Reader, mapper meta.RESTMapper, obj metav1.Object, bundle string) (map[types.UID]string, error) {
	var doomed map[types.UID]string
	doom := func(uid types.UID, why string) {
		if doomed == nil {
			doomed = map[types.UID]string{}
		}
		doomed[uid] = why
	}
	for _, ref := range obj.GetOwnerReferences() {
		if refersToBundle(ref) {
			continue
		}
		gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
		if _, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); meta.IsNoMatchError(err) {
			continue
		}
		owner := &metav1.PartialObjectMetadata{}
		owner.SetGroupVersionKind(gvk)
		err := reader.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: ref.Name}, owner)
		switch {
		case apierrors.IsNotFound(err), err == nil && owner.GetUID() != ref.UID:
			doom(ref.UID, "gone")
		case err != nil:
			return nil, fmt.Errorf("its owner %s %q cannot be read to tell whether the garbage collector would delete it with that owner: %w", ref.Kind, ref.Name, err)
		case bundle != "" && owner.GetLabels()[limbov1alpha1.LabelBundle] == bundle:
			doom(ref.UID, "an object of Bundle "+strconv.Quote(bundle))
		}
	}
	return doomed, nil
}
