package bundle

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/pkg/bundlespec"
	"github.com/limbo-dev/limbo/pkg/graph"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

func TestAppliedEvent(t *testing.T) {
	change := func(resource, event string) *appliedChange {
		return &appliedChange{resource: resource, kind: "ConfigMap", name: resource, event: event}
	}
	many := make([]*appliedChange, maxChangesInEvent+3)
	for i := range many {
		many[i] = change(fmt.Sprintf("c%d", i), limbov1alpha1.EventCreated)
	}
	cases := []struct {
		name    string
		changes []*appliedChange
		want    string // "" for no event
	}{
		{"no write, no event", nil, ""},
		{"one change: the event it always was", []*appliedChange{change("db", limbov1alpha1.EventUpdated)},
			`Normal Updated resource "db": ConfigMap db updated`},
		{"one kind of change: its reason", []*appliedChange{change("a", limbov1alpha1.EventCreated), change("b", limbov1alpha1.EventCreated)},
			`Normal Created resource "a": ConfigMap a created; resource "b": ConfigMap b created`},
		{"mixed: Applied, in the given order", []*appliedChange{change("b", limbov1alpha1.EventAdopted), change("a", limbov1alpha1.EventCreated)},
			`Normal Applied resource "b": ConfigMap b adopted; resource "a": ConfigMap a created`},
		{"bounded", many, "Normal Created " + strings.Join(func() []string {
			var parts []string
			for _, c := range many[:maxChangesInEvent] {
				parts = append(parts, c.String())
			}
			return append(parts, "and 3 more")
		}(), "; ")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(10)
			p := &pass{r: &Reconciler{Recorder: rec}, bundle: &limbov1alpha1.Bundle{}}
			p.emitAppliedEvent(tc.changes)
			p.emitAnnouncements()
			close(rec.Events)
			var got []string
			for e := range rec.Events {
				got = append(got, e)
			}
			switch {
			case tc.want == "" && len(got) != 0:
				t.Fatalf("events %q, want none", got)
			case tc.want != "" && (len(got) != 1 || got[0] != tc.want):
				t.Fatalf("events %q, want exactly %q", got, tc.want)
			}
		})
	}
}

func TestWaves(t *testing.T) {
	res := func(name string, deps ...string) limbov1alpha1.Resource {
		r := limbov1alpha1.Resource{Name: name}
		for _, d := range deps {
			r.References = append(r.References, limbov1alpha1.Reference{Resource: d})
		}
		return r
	}
	cases := []struct {
		name      string
		resources []limbov1alpha1.Resource
		want      [][]string
	}{
		{"none", nil, nil},
		{"independent: one wave, declaration order", []limbov1alpha1.Resource{res("b"), res("a"), res("c")}, [][]string{{"b", "a", "c"}}},
		{"a chain: one per wave", []limbov1alpha1.Resource{res("app", "cfg"), res("cfg", "ns"), res("ns")}, [][]string{{"ns"}, {"cfg"}, {"app"}}},
		{"by the deepest dependency", []limbov1alpha1.Resource{res("db"), res("cfg"), res("app", "db", "cfg"), res("web", "app"), res("job", "db")},
			[][]string{{"db", "cfg"}, {"app", "job"}, {"web"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := graph.ForResources(tc.resources)
			order, err := g.TopologicalSort()
			if err != nil {
				t.Fatal(err)
			}
			plan := &bundlespec.Plan{Order: order, Graph: g}
			var got [][]string
			for _, wave := range waves(plan) {
				var names []string
				for _, i := range wave {
					names = append(names, order[i])
				}
				got = append(got, names)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("waves %v, want %v", got, tc.want)
			}
		})
	}
}

// apiRequest is what TestApplyAnswer's API server saw of a request.
type apiRequest struct {
	method, path, query, contentType string
	// partial reports whether the request asked for metadata only.
	partial bool
}

// An apply of a ConfigMap or Secret asks for metadata only unless a reference
// reads its body; either answer leaves the same digest of limbo's field set, so
// the next pass's no-op check holds against the cache's metadata-only copy.
func TestApplyAnswer(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []apiRequest
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		partial := strings.Contains(req.Header.Get("Accept"), "as=PartialObjectMetadata")
		mu.Lock()
		seen = append(seen, apiRequest{req.Method, req.URL.Path, req.URL.RawQuery, req.Header.Get("Content-Type"), partial})
		mu.Unlock()
		var answer map[string]any
		if err := json.Unmarshal([]byte(managedConfigMapJSON), &answer); err != nil {
			t.Error(err)
		}
		if strings.Contains(req.URL.Path, "/deployments/") {
			answer["apiVersion"], answer["kind"] = "apps/v1", "Deployment"
		}
		if partial { // what the API server answers: the metadata as a PartialObjectMetadata
			answer = map[string]any{"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": answer["metadata"]}
		}
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(answer); err != nil {
			t.Error(err)
		}
	}))
	defer srv.Close()

	deploymentKind := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(configMapKind, meta.RESTScopeNamespace)
	mapper.Add(deploymentKind, meta.RESTScopeNamespace)
	c, err := client.New(&rest.Config{Host: srv.URL}, client.Options{Mapper: mapper})
	if err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Client: c}

	full := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(managedConfigMapJSON), &full.Object); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		gvk      schema.GroupVersionKind
		withBody bool
		wantPath string
		// wantPartial is whether the request asks for, and desired ends as, metadata only.
		wantPartial bool
	}{
		{"a ConfigMap no reference reads: metadata only", configMapKind, false, "/api/v1/namespaces/shop/configmaps/settings", true},
		{"a ConfigMap a reference reads: whole", configMapKind, true, "/api/v1/namespaces/shop/configmaps/settings", false},
		{"a kind cached whole: whole", deploymentKind, false, "/apis/apps/v1/namespaces/shop/deployments/settings", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			seen = nil
			mu.Unlock()
			desired := &unstructured.Unstructured{Object: map[string]any{"data": map[string]any{"k": "v"}}}
			desired.SetGroupVersionKind(tc.gvk)
			desired.SetNamespace("shop")
			desired.SetName("settings")
			if err := r.apply(context.Background(), desired, tc.withBody); err != nil {
				t.Fatal(err)
			}
			want := []apiRequest{{http.MethodPatch, tc.wantPath, "fieldManager=limbo&force=true", "application/apply-patch+yaml", tc.wantPartial}}
			mu.Lock()
			got := seen
			mu.Unlock()
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("requests\n%+v\nwant\n%+v", got, want)
			}
			if desired.GroupVersionKind() != tc.gvk || desired.GetUID() != "u-1" || desired.GetResourceVersion() != "7" {
				t.Errorf("desired does not hold the answer: %v", desired.Object)
			}
			_, hasData := desired.Object["data"]
			_, isPartial := desired.Object[metadataOnlyKey]
			if hasData == tc.wantPartial || isPartial != tc.wantPartial {
				t.Errorf("answer has data %v, marked metadata-only %v; want metadata only: %v", hasData, isPartial, tc.wantPartial)
			}
			if got, want := ownedFields(desired), ownedFields(full); got == "" || got != want {
				t.Errorf("digest of limbo's field set %x, want %x (the whole answer's)", got, want)
			}
		})
	}
}
