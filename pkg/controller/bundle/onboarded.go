package bundle

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// onboardedBundles are the Bundles whose objects a sharded controller has
// looked for with the API server (by the Bundle's label, every kind it uses)
// since the Bundle came into its cache: since the controller started, or since
// the Bundle moved into its shard (a Bundle that leaves the cache is
// forgotten). What another shard wrote before the Bundle moved carries that
// shard's label, which this shard's cache does not select; the status's
// hints of it (pendingDeletions, the objects status.resources names) do not
// always survive to the new shard's first pass — a spec error's pass rewrites
// status.resources without them (seed 606416444: an object dropped while the
// Bundle moved, neither stamped nor deleted) — so the first pass that can
// judge orphans looks for everything (decideUnseenOrphans). Safe for
// concurrent use; the zero value is empty.
type onboardedBundles struct {
	m sync.Map // types.NamespacedName -> types.UID
}

// has reports whether b, this incarnation of it, was looked for.
func (o *onboardedBundles) has(b *limbov1alpha1.Bundle) bool {
	uid, ok := o.m.Load(types.NamespacedName{Namespace: b.Namespace, Name: b.Name})
	return ok && uid.(types.UID) == b.UID
}

// add records that b was looked for.
func (o *onboardedBundles) add(b *limbov1alpha1.Bundle) {
	o.m.Store(types.NamespacedName{Namespace: b.Namespace, Name: b.Name}, b.UID)
}

// forget drops the Bundle named key: it left the cache.
func (o *onboardedBundles) forget(key types.NamespacedName) { o.m.Delete(key) }
