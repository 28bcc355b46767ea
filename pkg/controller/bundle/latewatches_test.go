package bundle

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
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

// A plugin's kind that was not served at the start is watched once a CRD serving
// it is established — not for another version or kind, not before it is
// established, not twice — also when that happened before Start (the CRD
// informer's first list); a CRD deleted, or no longer serving the version,
// stops its cache, and one installed anew is watched anew.
func TestLateWatches(t *testing.T) {
	metadataOf := func(gvk schema.GroupVersionKind) client.Object {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gvk)
		return m
	}
	drive := schema.GroupVersionKind{Group: "csi.example", Version: "v1", Kind: "Drive"}
	volume := schema.GroupVersionKind{Group: "csi.example", Version: "v1", Kind: "Volume"}
	crd := func(kind string, established bool, versions ...string) *apiextensionsv1.CustomResourceDefinition {
		c := &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "csi.example", Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind}}}
		for _, v := range versions {
			c.Spec.Versions = append(c.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: true})
		}
		if established {
			c.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}
		}
		return c
	}

	var mu sync.Mutex
	var started []string // the plugins of each watch started, in order
	l := newLateWatches(runtime.NewScheme(), []plugin.Watch{
		{Object: metadataOf(drive), Plugins: []string{"drives"}},
		{Object: metadataOf(volume), Plugins: []string{"volumes"}},
	})
	l.newCache = func() (cache.Cache, error) { return &informertest.FakeInformers{}, nil }
	l.handler = func(plugins []string) handler.EventHandler {
		mu.Lock()
		defer mu.Unlock()
		started = append(started, plugins[0])
		return handler.Funcs{}
	}
	l.watch = func(source.Source) error { return nil }
	startedNow := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(started)
	}
	runs := func(gvk schema.GroupVersionKind) bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		_, ok := l.running[gvk]
		return ok
	}

	l.serves(crd("Drive", true, "v1"), true) // before Start: the first list
	if got := startedNow(); len(got) != 0 {
		t.Fatalf("watches started before Start: %v", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- l.Start(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for len(startedNow()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // polling Start's goroutine, with a deadline
	}

	l.serves(crd("Volume", false, "v1"), true)      // not established yet
	l.serves(crd("Volume", true, "v2"), true)       // another version
	l.serves(crd("Gadget", true, "v1"), true)       // another kind
	l.serves(crd("Volume", true, "v2", "v1"), true) // the one
	l.serves(crd("Volume", true, "v1"), true)       // again: nothing
	if got, want := startedNow(), []string{"drives", "volumes"}; !slices.Equal(got, want) {
		t.Fatalf("watches started for %v, want %v", got, want)
	}
	if !runs(volume) {
		t.Fatal("no running watch of Volume")
	}

	l.serves(crd("Volume", true, "v1"), false) // deleted
	if runs(volume) {
		t.Errorf("the watch of Volume still runs after its CRD was deleted")
	}
	l.serves(crd("Volume", true, "v1"), true) // installed anew
	if got, want := startedNow(), []string{"drives", "volumes", "volumes"}; !slices.Equal(got, want) {
		t.Errorf("watches started for %v, want %v (Volume watched anew)", got, want)
	}
	l.serves(crd("Drive", true, "v2"), true) // v1 no longer listed
	if runs(drive) {
		t.Errorf("the watch of Drive v1 still runs after its CRD dropped v1")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start = %v", err)
	}
}
