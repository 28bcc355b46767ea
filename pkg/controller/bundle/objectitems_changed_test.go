package bundle

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
)

// A plugin's due object items are deleted only on the Bundle the pass decided
// on, as its own orphans are: the Bundle deleted, or its spec edited (the
// plugin resource removed, its delay raised), between the pass's cached read
// and the deletes, the items are held and decided again by the next pass.
// Before, the Bundle's own orphan was kept (stillOrphan) and the plugin's item
// deleted.
func TestPassItemsNotDeletedAfterTheBundleChanged(t *testing.T) {
	for _, change := range []string{"deleted", "edited", "unchanged"} {
		t.Run(change, func(t *testing.T) {
			registry, err := plugin.NewRegistry(inventoried{})
			if err != nil {
				t.Fatal(err)
			}
			b := livingBundle(limbov1alpha1.Resource{Name: "sweep", Plugin: &limbov1alpha1.PluginResource{Name: "inventoried"}})
			f := newTeardownFixture(t, b, registry, foreignConfigMap("debris", nil, ""), bundleConfigMap("orphan", nil))
			// The API server's Bundle, as read again: changed since the cache's.
			f.r.APIReader = interceptor.NewClient(f.c.(client.WithWatch), interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				err := c.Get(ctx, key, obj, opts...)
				if m, ok := obj.(*metav1.PartialObjectMetadata); ok && m.Kind == "Bundle" {
					switch change {
					case "deleted":
						now := metav1.Now()
						m.DeletionTimestamp = &now
					case "edited":
						m.Generation++
					}
				}
				return err
			}})
			f.reconcileUntil(t, "sweep not Ready", f.resourceReady(t, "sweep"))
			if change == "unchanged" {
				if f.liveConfigMap(t, "debris") != nil || f.liveConfigMap(t, "orphan") != nil {
					t.Error("the Bundle unchanged: want its orphan and its plugin's item deleted (no delay)")
				}
				return
			}
			if f.liveConfigMap(t, "orphan") == nil {
				t.Errorf("the Bundle's orphan deleted though the Bundle was %s since the pass read it", change)
			}
			if f.liveConfigMap(t, "debris") == nil {
				t.Errorf("the plugin's item deleted though the Bundle was %s since the pass read it", change)
			}
		})
	}
}

// A sharded pass whose Bundle left the shard stamps no plugin item: its stamp
// would be recorded by no status (the pass writes none), and only the status
// says where a Bundle's items in limbo are — a resource removed next, its
// items were never cancelled, and added again, found them long due.
func TestPassStampsNoItemOnceTheBundleLeftTheShard(t *testing.T) {
	sel, _ := shardA(t)
	registry, err := plugin.NewRegistry(inventoried{})
	if err != nil {
		t.Fatal(err)
	}
	b := livingBundle(limbov1alpha1.Resource{Name: "sweep", Plugin: &limbov1alpha1.PluginResource{Name: "inventoried", DeletionDelay: "1h"}})
	b.Labels = map[string]string{"limbo.dev/shard": "a"}
	f := newTeardownFixture(t, b, registry, foreignConfigMap("debris", nil, ""))
	f.r.Shard, f.r.Engine.Shard = sel, sel
	// The API server's Bundle moved to another shard, its spec edited.
	f.r.APIReader = movedBundle{Reader: f.c, labels: map[string]string{"limbo.dev/shard": "b"}, generation: b.Generation + 1}
	for range 3 {
		f.reconcile(t)
	}
	if debris := f.liveConfigMap(t, "debris"); debris == nil || debris.Annotations[limbov1alpha1.AnnotationDeletionTimestamp] != "" {
		t.Errorf("debris: %v; want it there, not stamped by a pass of a Bundle that left the shard", debris)
	}
}
