package bundle

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// stillInShard reports whether the Bundle this pass decided on, from this
// shard's cache, is still this shard's as the API server shows it: the same
// UID and generation, its labels still selected by the shard. A sharded
// controller asks it once a pass, before the pass's first write — a create,
// an apply, a cancel, a stamp, a delete, a release, an object or a Tombstone
// moved into the shard, a Tombstone made, a changed status — and a single
// controller never (its cache is its only writer's view). A shard whose cache
// has not seen the Bundle leave yet (a watch that took seconds to reconnect
// after a kube-apiserver restart, or a loaded process, in the soak) decided on
// the old spec for a Bundle another shard handles now: it stamped an object
// the new spec declares, found it with the API server and moved it into its
// own shard, in a fight with the new shard's passes (seed 341751649), and
// wrote the status of a spec error the user had fixed over the new shard's
// (seed 743617509, whose orphan was then neither stamped nor deleted); its
// applies would write the old spec's values over the new shard's. The same
// for a spec changed since the cache's copy. A Bundle that left (or a failed
// read) is left to the next pass, and the change's event, or the retry,
// brings it. A pass that changes nothing asks nothing.
func (p *pass) stillInShard(ctx context.Context) bool {
	if p.r.Shard == nil {
		return true
	}
	p.shardCheck.Do(func() { p.checkShard(ctx) })
	return !p.left
}

// stillInShardAfter is stillInShard asked again (once p.left, no more), for the
// writes a read of the API server made after the first answer leads to: such a
// read may show what the shard the Bundle moved to wrote since, an object it
// took out of limbo because its new spec declares it again. Seed 166862835: an
// onboarding listing found such an object, and the pass, on its answer from
// before the move, moved it in and stamped it. A Bundle the read shows written
// by another shard has left this one before that read, so the answer after it
// sees the move. It sets p.left outside shardCheck: it is for the pass's
// sequential steps (the orphan and item decisions), not for its concurrent
// applies.
func (p *pass) stillInShardAfter(ctx context.Context) bool {
	if p.r.Shard == nil {
		return true
	}
	p.shardCheck.Do(func() {}) // this answer is the pass's from now on
	if !p.left {
		p.checkShard(ctx)
	}
	return !p.left
}

// checkShard reads the Bundle again and sets p.left when it changed or left
// the shard, or could not be read.
func (p *pass) checkShard(ctx context.Context) {
	cur, err := p.readBundleAgain(ctx)
	switch {
	case err != nil:
		p.fail(fmt.Errorf("read the Bundle again before writing for it: %w", err))
		p.left = true
	case !p.decidedOn(cur) || !p.r.Shard.Matches(cur.Labels):
		log.FromContext(ctx).V(1).Info("the Bundle changed or left the shard since the cache showed it: the next pass writes for it",
			"generation", p.bundle.Generation, "now", cur.Generation, "labels", cur.Labels)
		p.left = true
	}
}

// readBundleAgain reads the Bundle's metadata from the API server, past the
// cache the pass decided on.
func (p *pass) readBundleAgain(ctx context.Context) (*metav1.PartialObjectMetadata, error) {
	return p.r.readBundleAgain(ctx, p.bundle)
}

// readBundleAgain reads b's metadata from the API server, past the cache.
func (r *Reconciler) readBundleAgain(ctx context.Context, b *limbov1alpha1.Bundle) (*metav1.PartialObjectMetadata, error) {
	cur := &metav1.PartialObjectMetadata{}
	cur.SetGroupVersionKind(limbov1alpha1.GroupVersion.WithKind("Bundle"))
	return cur, r.APIReader.Get(ctx, client.ObjectKeyFromObject(b), cur)
}

// bundleAsDecided reads the Bundle again from the API server (cur) and reports
// whether it is still the one this pass decided on (decidedOn) and not being
// deleted: what a delete decided on the cached Bundle asks first.
func (p *pass) bundleAsDecided(ctx context.Context) (cur *metav1.PartialObjectMetadata, current bool, err error) {
	if cur, err = p.readBundleAgain(ctx); err != nil {
		return nil, false, err
	}
	return cur, p.decidedOn(cur) && cur.DeletionTimestamp == nil, nil
}

// decidedOn reports whether cur, read again, is the Bundle of the spec this
// pass decided on: the same UID and generation.
func (p *pass) decidedOn(cur *metav1.PartialObjectMetadata) bool {
	return cur.UID == p.bundle.UID && cur.Generation == p.bundle.Generation
}

// intoShard moves applied, the API server's answer to limbo's apply, into the
// Bundle's shard when the apply left it outside: a label key of the shard's
// selector that the Bundle lacks is removed from the applied configuration,
// but the apply removes only what limbo's apply owns, and a key
// Engine.Relabel wrote (a merge patch, when the object was found in
// another shard's limbo) is not. The object then kept the old shard's label
// for good, shown in that shard's cache and not in this one's
// (it/shard_move_back_test.go). Only the labels are patched (metadata: a
// Secret's data is not read back), guarded by applied's resourceVersion.
func (p *pass) intoShard(ctx context.Context, applied *unstructured.Unstructured) error {
	if p.r.Shard.Matches(applied.GetLabels()) || !p.stillInShard(ctx) {
		return nil
	}
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(applied.GroupVersionKind())
	meta.SetNamespace(applied.GetNamespace())
	meta.SetName(applied.GetName())
	meta.SetUID(applied.GetUID())
	meta.SetResourceVersion(applied.GetResourceVersion())
	meta.SetLabels(applied.GetLabels())
	meta.SetOwnerReferences(applied.GetOwnerReferences())
	if err := p.r.Engine.Relabel(ctx, p.bundle, meta); err != nil {
		return err
	}
	applied.SetLabels(meta.GetLabels())
	applied.SetResourceVersion(meta.GetResourceVersion())
	return nil
}
