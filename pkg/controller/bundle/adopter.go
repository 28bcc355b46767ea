package bundle

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
)

// An object another Bundle of its namespace declares to adopt (limbo.dev/adopt)
// is never deleted by the Bundle it leaves: a pass at the end of its countdown
// (pass.handOver) and a teardown (releaseForAdoption) release it to the adopter
// instead, and the reaper holds it while a Bundle declares it to adopt it.

// adopter is another Bundle of b's namespace, not being deleted, that declares o
// to adopt it (limbo.dev/adopt); nil when there is none. A single controller
// finds adopters in its cache (an index of the objects Bundles adopt). A shard's
// cache holds only its own Bundles, and the adopter may be of another shard
// (Bundles of one namespace can be): a sharded controller reads the namespace's
// Bundles from the API server, as the reaper does — only when it is about to
// delete or release an object, which is rare beside the applies.
func (r *Reconciler) adopter(ctx context.Context, b *limbov1alpha1.Bundle, o client.Object) (*client.ObjectKey, error) {
	var adopters limbov1alpha1.BundleList
	gvk := o.GetObjectKind().GroupVersionKind()
	var err error
	if r.Shard == nil {
		key := bundlespec.AdoptionKey(gvk.GroupKind(), o.GetName())
		err = r.Client.List(ctx, &adopters, client.InNamespace(b.Namespace), client.MatchingFields{adoptionIndex: key}, client.UnsafeDisableDeepCopy)
	} else {
		err = r.APIReader.List(ctx, &adopters, client.InNamespace(b.Namespace))
	}
	if err != nil {
		return nil, fmt.Errorf("list the Bundles adopting %s %s: %w", gvk.Kind, o.GetName(), err)
	}
	if a := bundlespec.Adopter(adopters.Items, gvk.GroupKind(), o.GetName(), b.Name); a != nil {
		k := client.ObjectKeyFromObject(a)
		return &k, nil
	}
	return nil, nil
}

// releaseForAdoption tells whether the teardown releases o, and to which
// adopter: another Bundle of b's namespace that declares o to adopt it
// (limbo.dev/adopt). The teardown then releases o, even without a delay, instead
// of deleting it with b: the reaper holds a released object while a Bundle
// declares it to adopt it, the adopter adopts it (an object moved by deleting the
// Bundle it came from keeps its data), and if the adopter goes first the reaper
// deletes it — what the teardown would have done. Released, o is no evidence of
// --cascade=orphan for the next teardown pass either, as a merely disowned object
// would be. A failed lookup releases too, with no adopter named: the reaper
// decides on the API server's Bundles.
func (r *Reconciler) releaseForAdoption(ctx context.Context, b *limbov1alpha1.Bundle, o client.Object) (string, bool) {
	adopter, err := r.adopter(ctx, b, o)
	switch {
	case err != nil:
		return "", true
	case adopter != nil:
		return adopter.Name, true
	}
	return "", false
}
