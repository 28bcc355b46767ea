package main

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// What holds an object in limbo is asked of every object pending lists, and
// pending -A has the Bundles of every namespace: a copy and a scan of that
// listing for each object made it cost objects × Bundles (6.3 ms, 900 KB an
// object at 10k Bundles, 10 minutes for 100k objects). Each object's holds read
// the Bundles of its own namespace and the one its label names, and cost the
// same whatever the number of Bundles elsewhere.
func TestObjectHoldsWithManyBundles(t *testing.T) {
	const namespaces, bundlesPerNamespace = 20, 100
	namespace := func(i int) string { return fmt.Sprintf("team-%02d", i%namespaces) }
	template := func(name string, annotations map[string]string) *runtime.RawExtension {
		raw, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "annotations": annotations}})
		if err != nil {
			t.Fatal(err)
		}
		return &runtime.RawExtension{Raw: raw}
	}
	// Bundle shop-i, of namespace(i), declares ConfigMaps shop-i-a and shop-i-b.
	var bundles []limbov1alpha1.Bundle
	for i := range namespaces * bundlesPerNamespace {
		name := fmt.Sprintf("shop-%04d", i)
		b := limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: namespace(i), Name: name, UID: uid(name)}}
		for _, suffix := range []string{"a", "b"} {
			b.Spec.Resources = append(b.Spec.Resources, limbov1alpha1.Resource{Name: suffix, Object: template(name+"-"+suffix, nil)})
		}
		bundles = append(bundles, b)
	}
	adopt := map[string]string{limbov1alpha1.AnnotationAdopt: "true"}
	// shop-0007, of team-07, declares ConfigMap moved to adopt it; shop-1948, of
	// team-08, declares ConfigMap stray to adopt it.
	bundles[7].Spec.Resources = append(bundles[7].Spec.Resources, limbov1alpha1.Resource{Name: "moved", Object: template("moved", adopt)})
	bundles[1948].Spec.Resources = append(bundles[1948].Spec.Resources, limbov1alpha1.Resource{Name: "stray", Object: template("stray", adopt)})
	// shop-0013, of team-13, is being torn down.
	bundles[13].DeletionTimestamp = &metav1.Time{Time: testNow}

	object := func(m metav1.ObjectMeta) pendingItem {
		return objectItem(&metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: m}, testNow)
	}
	due := stampAgo(2 * time.Hour)
	restored := inLimbo("team-05", "restored", "shop-0005", "1h", due)
	restored.OwnerReferences = nil
	index := indexBundles(bundles)
	// holds is what pending tells of each object it lists (collectPending).
	holds := func(item *pendingItem) {
		holdReleased(item, index, testNow)
		holdUncontrolled(item, index)
		tellTeardown(item, index)
	}
	var items []pendingItem
	for _, tc := range []struct {
		name        string
		item        pendingItem
		wantHeld    bool
		wantMessage string
	}{{
		// A Bundle of another namespace declares it to adopt it: no hold.
		name: "released, adopted in another namespace",
		item: object(releasedBy(inLimbo("team-03", "stray", "shop-0003", "1h", due), stampAgo(time.Hour))),
	}, {
		name:        "released, a Bundle of its namespace adopts it",
		item:        object(releasedBy(inLimbo("team-07", "moved", "shop-1987", "1h", due), stampAgo(time.Hour))),
		wantHeld:    true,
		wantMessage: "held by the reaper: Bundle shop-0007 declares it to adopt it (limbo.dev/adopt); deleted only once no Bundle does",
	}, {
		name:        "released, declared by its Bundle",
		item:        object(releasedBy(inLimbo("team-09", "shop-1989-a", "shop-1989", "1h", due), stampAgo(time.Hour))),
		wantHeld:    true,
		wantMessage: "held by the reaper: Bundle shop-1989, which its label limbo.dev/bundle names, declares it but has not adopted it (see the Bundle's status)",
	}, {
		name: "counted down by its Bundle",
		item: object(inLimbo("team-11", "counted", "shop-1991", "1h", due)),
	}, {
		name:        "restored, controlled by no Bundle",
		item:        object(restored),
		wantHeld:    true,
		wantMessage: "controlled by no Bundle (a restore from a backup drops owner references): nothing deletes it; declare it again in a Bundle, kubectl limbo cancel it, or delete it",
	}, {
		name:        "its Bundle being torn down",
		item:        object(inLimbo("team-13", "counted", "shop-0013", "1h", due)),
		wantMessage: "its Bundle is being torn down: the teardown releases it to the reaper with this countdown, once the Bundle's plugin teardowns are done",
	}} {
		item := tc.item
		holds(&item)
		if held := item.countdown == countdownHeld; held != tc.wantHeld || item.Message != tc.wantMessage {
			t.Errorf("%s: held %t, message %q; want held %t, message %q", tc.name, held, item.Message, tc.wantHeld, tc.wantMessage)
		}
		items = append(items, tc.item)
	}
	result := testing.Benchmark(func(b *testing.B) {
		for range b.N {
			for _, item := range items {
				holds(&item)
			}
		}
	})
	// The templates of the Bundle an object's label names are decoded, and a
	// message written; no listing is copied (about 450 KB an object, copied;
	// 1.2 KB, and 15 KB under the race detector, which allocates for itself).
	const bound = 64 << 10
	if perObject := result.AllocedBytesPerOp() / int64(len(items)); perObject > bound {
		t.Errorf("holds of an object among %d Bundles: %d bytes allocated, want at most %d", len(bundles), perObject, bound)
	}
}
