package bundle

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// What a pass and a teardown wave cost per object must not grow with the size
// of the Bundle: a scan of its status, or a decode of its templates, for each
// object made both quadratic (0.9 s a pass at 5,000 orphans and 1,500 status
// entries; 6.2 s a teardown wave of 500).

// orphanInLimbo is the ConfigMap name of shop/web (UID b-uid), in limbo: its
// countdown of an hour started a minute ago, labelled pending. The engine only
// waits on it, with no write.
func orphanInLimbo(name string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetGroupVersionKind(configMapGVK)
	o.SetNamespace("shop")
	o.SetName(name)
	o.SetUID(types.UID("uid-" + name))
	o.SetLabels(map[string]string{limbov1alpha1.LabelBundle: "web", limbov1alpha1.LabelPendingDeletion: "true"})
	o.SetAnnotations(map[string]string{
		limbov1alpha1.AnnotationDeletionDelay:     "1h",
		limbov1alpha1.AnnotationDeletionTimestamp: softdelete.FormatStamp(time.Now().Add(-time.Minute)),
	})
	yes := true
	o.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: limbov1alpha1.GroupVersion.String(), Kind: "Bundle", Name: "web", UID: "b-uid", Controller: &yes}})
	return o
}

// statusOfSize is a status of n resources, each with its object, and n
// pending deletions, none of them of the orphans orphanInLimbo makes, but for
// the last resource's object (orphan-0) and the last entry's (orphan-1): each
// lookup of an orphan's resource that scans them goes through all of them.
func statusOfSize(n int) limbov1alpha1.BundleStatus {
	var st limbov1alpha1.BundleStatus
	for i := range n {
		name := fmt.Sprintf("declared-%d", i)
		if i == n-1 {
			name = "orphan-0"
		}
		st.Resources = append(st.Resources, limbov1alpha1.ResourceStatus{Name: fmt.Sprintf("res-%d", i), State: limbov1alpha1.ResourceReady,
			Object: &limbov1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Name: name, UID: "uid-" + name}})
	}
	for i := range n {
		name := fmt.Sprintf("gone-%d", i)
		if i == n-1 {
			name = "orphan-1"
		}
		st.PendingDeletions = append(st.PendingDeletions, limbov1alpha1.PendingDeletion{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop",
			Name: name, Resource: fmt.Sprintf("was-%d", i)})
	}
	return st
}

// orphanDecisions runs the orphan decisions of a pass (heldByAResource, then
// orphanAll) over orphans ConfigMaps of a Bundle whose status is
// statusOfSize(n), and returns the pass.
func orphanDecisions(f *teardownFixture, orphans, n int) *pass {
	b := livingBundle()
	b.Status = statusOfSize(n)
	p := newPass(f.r, b)
	p.resources = b.Status.Resources
	objs := make([]*unstructured.Unstructured, orphans)
	for i := range objs {
		objs[i] = orphanInLimbo(fmt.Sprintf("orphan-%d", i))
	}
	objs = slices.DeleteFunc(objs, p.heldByAResource)
	p.orphanAll(context.Background(), objs, true)
	return p
}

// The orphan decisions are the same with the status indexed once per pass as
// with a scan of it per orphan, at any size: orphan-0 is held by the resource
// whose object it is (by its UID), orphan-1 was the last entry's, the rest no
// resource's. (What they cost as the status grows is BenchmarkOrphanDecisions':
// 20 to 40 times more per orphan with 100 times the status, scanned; about the
// same, indexed.)
func TestOrphanDecisionsAtAnySize(t *testing.T) {
	const orphans = 200
	f := newTeardownFixture(t, deletedBundle(nil, limbov1alpha1.BundleStatus{}), nil)
	for _, n := range []int{1, 50, 2000} {
		p := orphanDecisions(f, orphans, n)
		if len(p.pending) != orphans-1 {
			t.Fatalf("status of %d: %d entries, want %d", n, len(p.pending), orphans-1)
		}
		for _, pd := range p.pending {
			want := ""
			if pd.Name == "orphan-1" {
				want = fmt.Sprintf("was-%d", n-1)
			}
			if pd.Resource != want {
				t.Errorf("status of %d: %s is resource %q's, want %q", n, pd.Name, pd.Resource, want)
			}
		}
	}
}

// BenchmarkOrphanDecisions: 1,000 orphans with a status of 100 and of 10,000
// entries (resources and pending deletions): the time per run must not grow
// with the status (0.9 s a pass at 5,000 orphans, scanned).
func BenchmarkOrphanDecisions(b *testing.B) {
	f := newTeardownFixture(b, deletedBundle(nil, limbov1alpha1.BundleStatus{}), nil)
	for _, n := range []int{50, 5000} {
		b.Run(fmt.Sprintf("status=%d", 2*n), func(b *testing.B) {
			for b.Loop() {
				orphanDecisions(f, 1000, n)
			}
		})
	}
}

// One teardown wave of 200 objects in limbo, of a Bundle of 200 templates,
// decodes each template once, not once per object and decision: its
// allocations stay within a small budget per object and per template.
func TestTeardownWaveDecodesEachTemplateOnce(t *testing.T) {
	const n = 200
	var resources []limbov1alpha1.Resource
	for i := range n {
		resources = append(resources, cmResource(t, fmt.Sprintf("declared-%d", i),
			map[string]string{limbov1alpha1.AnnotationDeletionDelay: "2h", "example.com/owner": "team-a"}))
	}
	b := deletedBundle(resources, limbov1alpha1.BundleStatus{ObservedGeneration: 1})
	f := newTeardownFixture(t, b, nil)
	// No Bundle declares the objects to adopt them: the cache's adoption index
	// answers with none, where the fake client copies every Bundle it lists.
	f.r.Client = interceptor.NewClient(f.c.(client.WithWatch), interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if _, ok := list.(*limbov1alpha1.BundleList); ok {
			return nil
		}
		return c.List(ctx, list, opts...)
	}})
	plan, _ := bundlespec.ParsePartial(b, f.r.Mapper, f.r.Plugins)
	// Not in the fake API server: each release finds its object gone (NotFound),
	// the same at every run.
	var objects []*unstructured.Unstructured
	for i := range n {
		objects = append(objects, orphanInLimbo(fmt.Sprintf("orphan-%d", i)))
	}
	var acted bool
	allocs := testing.AllocsPerRun(1, func() {
		_, acted, _ = f.r.nextWave(context.Background(), b, plan, objects, nil, pluginTeardowns{})
	})
	if !acted {
		t.Fatal("the wave did not act")
	}
	// A budget of 250 allocations per object and 50 per template: the
	// release of each object (about 140), and one decode of each template.
	// Decoding every template for each object and decision is 80,000 decodes,
	// about 1.6 million allocations.
	if budget := float64(250*n + 50*n); allocs > budget {
		t.Errorf("one teardown wave of %d objects and %d templates: %.0f allocations, want at most %.0f", n, n, allocs, budget)
	}
}
