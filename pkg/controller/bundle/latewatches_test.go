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
		return l.watches[gvk].stop != nil
	}
	// eventually polls Start's goroutine, which starts the watches, with a
	// deadline.
	eventually := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not after 10s (watches started for %v)", what, startedNow())
			}
		}
	}
	startedAre := func(want ...string) func() bool {
		return func() bool { return slices.Equal(startedNow(), want) }
	}

	l.serves(crd("Drive", true, "v1"), true) // before Start: the first list
	if got := startedNow(); len(got) != 0 {
		t.Fatalf("watches started before Start: %v", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- l.Start(ctx) }()
	eventually("Drive watched once Start runs", func() bool { return runs(drive) })

	l.serves(crd("Volume", false, "v1"), true)      // not established yet
	l.serves(crd("Volume", true, "v2"), true)       // another version
	l.serves(crd("Gadget", true, "v1"), true)       // another kind
	l.serves(crd("Volume", true, "v2", "v1"), true) // the one
	l.serves(crd("Volume", true, "v1"), true)       // again: nothing
	eventually("Volume watched", func() bool { return runs(volume) })
	if got, want := startedNow(), []string{"drives", "volumes"}; !slices.Equal(got, want) {
		t.Fatalf("watches started for %v, want %v", got, want)
	}

	l.serves(crd("Volume", true, "v1"), false) // deleted
	if runs(volume) {
		t.Errorf("the watch of Volume still runs after its CRD was deleted")
	}
	l.serves(crd("Volume", true, "v1"), true) // installed anew
	eventually("Volume watched anew", startedAre("drives", "volumes", "volumes"))
	l.serves(crd("Drive", true, "v2"), true) // v1 no longer listed
	if runs(drive) {
		t.Errorf("the watch of Drive v1 still runs after its CRD dropped v1")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start = %v", err)
	}
}

// The controller's Watch waits while the controller starts (it holds its lock
// until its sources synced), and the CRD events that call serves come from one
// of those sources: serves must return at once, the watch starting once the
// controller's start is done. Before, a CRD established before the controller
// started (a standby replica taking the lease after csi-baremetal was
// installed) made serves call Watch from the CRD informer's first list, which
// then never synced: the controller's start failed after its sync timeout.
func TestLateWatchesNeverWaitInTheHandler(t *testing.T) {
	drive := schema.GroupVersionKind{Group: "csi.example", Version: "v1", Kind: "Drive"}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(drive)
	l := newLateWatches(runtime.NewScheme(), []plugin.Watch{{Object: m, Plugins: []string{"drives"}}})
	l.newCache = func() (cache.Cache, error) { return &informertest.FakeInformers{}, nil }
	l.handler = func([]string) handler.EventHandler { return handler.Funcs{} }
	var controllerLock sync.Mutex // the controller's, held while it starts
	watched := make(chan struct{})
	l.watch = func(source.Source) error {
		controllerLock.Lock()
		defer controllerLock.Unlock()
		close(watched)
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	running := &doneWatched{Context: ctx, waits: make(chan struct{})}
	controllerLock.Lock() // the controller starts, waiting for its sources
	go func() { _ = l.Start(running) }()
	<-running.waits // Start runs, and waits for something to do
	served := make(chan struct{})
	go func() {
		crd := &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "csi.example",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Drive"}, Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true}}},
			Status: apiextensionsv1.CustomResourceDefinitionStatus{Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}}}
		for range 3 { // the first list, then updates: Start may be anywhere
			l.serves(crd, true)
		}
		close(served)
	}()
	select {
	case <-served:
	case <-time.After(10 * time.Second):
		t.Fatal("serves waited for the controller's start to end: the CRD source would never sync")
	}
	controllerLock.Unlock() // its sources synced
	select {
	case <-watched:
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not start once the controller had started")
	}
}

// doneWatched is a context that tells (waits) when Done is first called: its
// user waits on it.
type doneWatched struct {
	context.Context
	once  sync.Once
	waits chan struct{}
}

func (d *doneWatched) Done() <-chan struct{} {
	d.once.Do(func() { close(d.waits) })
	return d.Context.Done()
}
