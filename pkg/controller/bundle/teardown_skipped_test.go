package bundle

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
)

// A Bundle deleted with --cascade=foreground goes without its plugin
// teardowns (deorbit's), as documented, and says so: a Warning event for each,
// once. Argo CD deletes and prunes in foreground by default; the cleanup was
// skipped without a word.
func TestForegroundDeleteSaysWhichTeardownsItSkips(t *testing.T) {
	registry, err := plugin.NewRegistry(sweeper{done: &atomic.Bool{}})
	if err != nil {
		t.Fatal(err)
	}
	sweep := limbov1alpha1.Resource{Name: "sweep", Plugin: &limbov1alpha1.PluginResource{Name: "sweeper"}}
	b := deletedBundle([]limbov1alpha1.Resource{sweep, configMapResource(t, "cm")}, limbov1alpha1.BundleStatus{}, metav1.FinalizerDeleteDependents)
	f := newTeardownFixture(t, b, registry)
	got := f.eventsOfAPass(t)
	want := "Warning TeardownSkipped plugin resource sweep (sweeper): its teardown did not run: the Bundle was deleted with --cascade=foreground"
	if len(got) != 1 || !strings.HasPrefix(got[0], want) {
		t.Errorf("events %q, want one starting %q", got, want)
	}
}

// The objects with a deletionDelay that a foreground delete has the garbage
// collector delete at once are named too, in one Warning: their countdowns
// were skipped without a word.
func TestForegroundDeleteSaysWhichDelaysItSkips(t *testing.T) {
	b := deletedBundle([]limbov1alpha1.Resource{configMapResource(t, "db"), configMapResource(t, "cache"), configMapResource(t, "plain")},
		limbov1alpha1.BundleStatus{}, metav1.FinalizerDeleteDependents)
	// The garbage collector is at cache already (a foreground delete holds it
	// while its own dependents go); old was being deleted before the Bundle was.
	cache := bundleConfigMap("cache", map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1h"}, metav1.FinalizerDeleteDependents)
	cache.DeletionTimestamp = b.DeletionTimestamp
	before := metav1.NewTime(b.DeletionTimestamp.Add(-time.Minute))
	old := bundleConfigMap("old", map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1h"}, "example.com/backup")
	old.DeletionTimestamp = &before
	f := newTeardownFixture(t, b, nil,
		bundleConfigMap("db", map[string]string{limbov1alpha1.AnnotationDeletionDelay: "24h"}),
		cache, old, bundleConfigMap("plain", nil))
	got := f.eventsOfAPass(t)
	want := "Warning TeardownSkipped the deletionDelay of 2 objects did not run: the Bundle was deleted with --cascade=foreground, and the garbage collector deletes them at once (ConfigMap cache (held by finalizers: foregroundDeletion), ConfigMap db)"
	if len(got) != 1 || !strings.HasPrefix(got[0], want) {
		t.Errorf("events %q, want one starting %q", got, want)
	}
}

// eventsOfAPass runs one Reconcile of the fixture's Bundle and returns the
// events it recorded, its engine's too.
func (f *teardownFixture) eventsOfAPass(t *testing.T) []string {
	t.Helper()
	events := make(chan string, 10)
	f.r.Recorder = &record.FakeRecorder{Events: events}
	f.r.Engine.Recorder = f.r.Recorder
	f.reconcile(t)
	close(events)
	var got []string
	for e := range events {
		got = append(got, e)
	}
	return got
}
