package bundle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/pkg/shard"
)

// scanDiscovery serves the kinds of a cluster: ConfigMaps, PodTemplates,
// Deployments, Tombstones, a kind that cannot be watched, a subresource; err
// is its error (a group whose discovery failed).
type scanDiscovery struct{ err error }

func (d scanDiscovery) ServerPreferredNamespacedResources() ([]*metav1.APIResourceList, error) {
	all := metav1.Verbs{"list", "watch", "delete", "patch"}
	return []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: all},
			{Name: "podtemplates", Kind: "PodTemplate", Namespaced: true, Verbs: all},
			{Name: "bindings", Kind: "Binding", Namespaced: true, Verbs: metav1.Verbs{"create"}},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", Kind: "Deployment", Namespaced: true, Verbs: all},
			{Name: "deployments/status", Kind: "Deployment", Namespaced: true, Verbs: metav1.Verbs{"get", "patch"}},
		}},
		{GroupVersion: "limbo.dev/v1alpha1", APIResources: []metav1.APIResource{
			{Name: "tombstones", Kind: "Tombstone", Namespaced: true, Verbs: all},
		}},
	}, d.err
}

// scanReader answers the scan's LISTs: an object in namespace holds[kind], if
// any; failing[kind] fails the LIST. It records each LIST.
type scanReader struct {
	client.Reader
	holds   map[string]string
	failing map[string]error
	lists   []string
}

func (r *scanReader) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	o := (&client.ListOptions{}).ApplyOptions(opts)
	kind := strings.TrimSuffix(list.GetObjectKind().GroupVersionKind().Kind, "List")
	r.lists = append(r.lists, fmt.Sprintf("%s ns=%q %s limit=%d", kind, o.Namespace, o.LabelSelector, o.Limit))
	if err := r.failing[kind]; err != nil {
		return err
	}
	if ns, ok := r.holds[kind]; ok && (o.Namespace == "" || o.Namespace == ns) {
		list.(*metav1.PartialObjectMetadataList).Items = []metav1.PartialObjectMetadata{{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x"}}}
	}
	return nil
}

// The start scan reads every namespaced kind that can be watched (Tombstones
// excepted: the engine's records) with one LIST of at most one object of the
// controller's Bundles, in each of its namespaces; it watches the kinds that
// hold one; it retries only what it could not read, and lets teardowns go once
// every kind has been tried.
func TestStartScan(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "", errors.New("no"))
	// everyKind are the LISTs of a scan of every namespace.
	everyKind := []string{
		`ConfigMap ns="" limbo.dev/bundle limit=1`,
		`PodTemplate ns="" limbo.dev/bundle limit=1`,
		`Deployment ns="" limbo.dev/bundle limit=1`,
	}
	sharded, err := shard.Parse("limbo.dev/shard=a")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		namespaces []string
		shard      *shard.Selector
		discovery  error
		holds      map[string]string
		failing    map[string]error
		watchFails bool
		wantLists  []string
		wantWatch  string
		wantErr    string
		wantDone   bool
		// wantRetry are the LISTs of the scan after (nothing failing then).
		wantRetry []string
	}{{
		name:      "every namespace",
		holds:     map[string]string{"PodTemplate": "shop"},
		wantLists: everyKind,
		wantWatch: "[/v1, Kind=PodTemplate]",
		wantDone:  true,
	}, {
		name:       "the controller's namespaces, in its shard; a kind found in the first is not listed in the second",
		namespaces: []string{"a", "b"},
		shard:      sharded,
		holds:      map[string]string{"ConfigMap": "a", "Deployment": "b"},
		wantLists: []string{
			`ConfigMap ns="a" limbo.dev/bundle,limbo.dev/shard=a limit=1`,
			`PodTemplate ns="a" limbo.dev/bundle,limbo.dev/shard=a limit=1`,
			`PodTemplate ns="b" limbo.dev/bundle,limbo.dev/shard=a limit=1`,
			`Deployment ns="a" limbo.dev/bundle,limbo.dev/shard=a limit=1`,
			`Deployment ns="b" limbo.dev/bundle,limbo.dev/shard=a limit=1`,
		},
		wantWatch: "[/v1, Kind=ConfigMap apps/v1, Kind=Deployment]",
		wantDone:  true,
	}, {
		name:      "a kind that cannot be read is retried alone; teardowns go ahead",
		holds:     map[string]string{"Deployment": "shop"},
		failing:   map[string]error{"Deployment": forbidden},
		wantLists: everyKind,
		wantWatch: "[]",
		wantErr:   "apps/v1, Resource=deployments: deployments.apps is forbidden",
		wantDone:  true,
		wantRetry: []string{`Deployment ns="" limbo.dev/bundle limit=1`},
	}, {
		name:       "a kind whose watch does not sync is retried",
		holds:      map[string]string{"ConfigMap": "shop"},
		watchFails: true,
		wantLists:  everyKind,
		wantWatch:  "[/v1, Kind=ConfigMap]",
		wantErr:    "/v1, Resource=configmaps: not synced",
		wantDone:   true,
		wantRetry:  []string{`ConfigMap ns="" limbo.dev/bundle limit=1`},
	}, {
		name:      "discovery failed for some groups: the others are read",
		discovery: &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{{Group: "metrics.k8s.io", Version: "v1beta1"}: errors.New("unavailable")}},
		wantLists: everyKind,
		wantWatch: "[]",
		wantErr:   "unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: unavailable",
		wantDone:  true,
		wantRetry: []string{},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			reader := &scanReader{holds: tc.holds, failing: tc.failing}
			var watched []schema.GroupVersionKind
			s := &startScan{discovery: scanDiscovery{err: tc.discovery}, reader: reader, namespaces: tc.namespaces,
				selector: tc.shard.And(ManagedSelector()),
				watch: func(_ context.Context, gvk schema.GroupVersionKind) error {
					watched = append(watched, gvk)
					if tc.watchFails {
						return errors.New("not synced")
					}
					return nil
				}}
			read := map[schema.GroupVersionKind]bool{}
			err := s.scan(context.Background(), read)
			if got := fmt.Sprint(err); (tc.wantErr == "") != (err == nil) || err != nil && !strings.Contains(got, tc.wantErr) {
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
			if fmt.Sprint(reader.lists) != fmt.Sprint(tc.wantLists) {
				t.Errorf("LISTs:\n%s\nwant:\n%s", strings.Join(reader.lists, "\n"), strings.Join(tc.wantLists, "\n"))
			}
			if fmt.Sprint(watched) != tc.wantWatch {
				t.Errorf("watched %v, want %s", watched, tc.wantWatch)
			}
			if s.scanned() != tc.wantDone {
				t.Errorf("scanned() = %v, want %v", s.scanned(), tc.wantDone)
			}
			if err == nil {
				return
			}
			reader.lists, reader.failing, tc.watchFails = nil, nil, false
			s.discovery = scanDiscovery{}
			if err := s.scan(context.Background(), read); err != nil {
				t.Errorf("the retry failed: %v", err)
			}
			if fmt.Sprint(reader.lists) != fmt.Sprint(tc.wantRetry) {
				t.Errorf("LISTs of the retry: %v, want %v", reader.lists, tc.wantRetry)
			}
		})
	}
}

// Until the scan has tried every kind, teardowns wait; a controller without a
// scan has nothing to wait for.
func TestStartScanHoldsTeardownsUntilTried(t *testing.T) {
	var none *startScan
	if !none.scanned() {
		t.Error("no scan: scanned() = false")
	}
	s := &startScan{discovery: failingDiscovery{}, reader: &scanReader{}}
	if err := s.scan(context.Background(), map[schema.GroupVersionKind]bool{}); err == nil {
		t.Fatal("a scan without discovery succeeded")
	}
	if s.scanned() {
		t.Error("scanned() after a scan that discovered nothing")
	}
}

type failingDiscovery struct{}

func (failingDiscovery) ServerPreferredNamespacedResources() ([]*metav1.APIResourceList, error) {
	return nil, errors.New("the API server is down")
}
