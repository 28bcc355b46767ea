package bundle

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/limbo-dev/limbo/pkg/plugin"
)

// A plugin's kind that was not served at the start is watched once: when a CRD
// serving it is established (not for another version or kind, nor a second
// time), or at Start when it is served by then (a CRD established before the
// CRD informer's first list, whose event is not passed as new).
func TestLateWatches(t *testing.T) {
	metadataOf := func(gvk schema.GroupVersionKind) client.Object {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gvk)
		return m
	}
	drive := schema.GroupVersionKind{Group: "csi.example", Version: "v1", Kind: "Drive"}
	volume := schema.GroupVersionKind{Group: "csi.example", Version: "v1", Kind: "Volume"}
	crd := func(kind string, versions ...string) *apiextensionsv1.CustomResourceDefinition {
		c := &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "csi.example", Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind}}}
		for _, v := range versions {
			c.Spec.Versions = append(c.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: true})
		}
		return c
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(volume, meta.RESTScopeRoot) // served by the time Start runs

	var mu sync.Mutex
	var watched [][]string
	l := newLateWatches(runtime.NewScheme(), mapper, []plugin.Watch{
		{Object: metadataOf(drive), Plugins: []string{"node-removal"}},
		{Object: metadataOf(volume), Plugins: []string{"node-removal", "other"}},
	})
	l.newCache = func() (cache.Cache, error) { return &informertest.FakeInformers{}, nil }
	l.handler = func(plugins []string) handler.EventHandler {
		mu.Lock()
		defer mu.Unlock()
		watched = append(watched, plugins)
		return handler.Funcs{}
	}
	l.watch = func(source.Source) error { return nil }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error)
	go func() { done <- l.Start(ctx) }()

	l.serving(crd("Drive", "v2"))       // another version
	l.serving(crd("Gadget", "v1"))      // another kind
	l.serving(crd("Drive", "v2", "v1")) // the one
	l.serving(crd("Drive", "v1"))       // again
	// In any order: Start's look-up and the events race.
	want := [][]string{{"node-removal"}, {"node-removal", "other"}}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		got := slices.Clone(watched)
		mu.Unlock()
		slices.SortFunc(got, slices.Compare[[]string])
		if len(got) >= len(want) || time.Now().After(deadline) {
			if !slices.EqualFunc(got, want, slices.Equal[[]string]) {
				t.Fatalf("watches started for %v, want %v", got, want)
			}
			break
		}
		time.Sleep(10 * time.Millisecond) // polling Start's goroutine, with a deadline
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(watched) != len(want) {
		t.Errorf("watches started for %v, want %v", watched, want)
	}
}
