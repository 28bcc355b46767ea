package bundlespec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// catalog knows one plugin, "gc", whose spec must not have "bad", and whose
// interval, unless unresolved, is a duration.
type catalog struct{}

func (catalog) ValidateSpec(name string, spec *apiextensionsv1.JSON, unresolved []string) error {
	if name != "gc" {
		return fmt.Errorf("%w %q (known: gc)", ErrUnknownPlugin, name)
	}
	if spec != nil && string(spec.Raw) == `{"bad":true}` {
		return errors.New("spec.bad: Forbidden")
	}
	// Its spec reaches the check as written: a large integer keeps its digits.
	if spec != nil && bytes.Contains(spec.Raw, []byte(`"n":`)) && !bytes.Contains(spec.Raw, []byte(`"n":9007199254740993`)) {
		return fmt.Errorf("spec.n changed on its way: %s", spec.Raw)
	}
	var fields struct{ Interval *string }
	if spec != nil && json.Unmarshal(spec.Raw, &fields) == nil && fields.Interval != nil && !intervalPattern.MatchString(*fields.Interval) && !slices.Contains(unresolved, "spec.interval") {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "interval"), *fields.Interval, "interval in body should match '^[0-9]+[smh]$'")}.ToAggregate()
	}
	return nil
}

var intervalPattern = regexp.MustCompile(`^[0-9]+[smh]$`)

func mapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	m.Add(schema.GroupVersionKind{Group: "limbo.dev", Version: "v1beta1", Kind: "Tombstone"}, meta.RESTScopeNamespace) // a version limbo may serve one day
	return m
}

func obj(t *testing.T, v map[string]any) *runtime.RawExtension {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return &runtime.RawExtension{Raw: data}
}

func cm(name string, extra map[string]any) map[string]any {
	md := map[string]any{"name": name}
	for k, v := range extra {
		md[k] = v
	}
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md}
}

func TestParse(t *testing.T) {
	plugin := func(name, delay, spec string) *limbov1alpha1.PluginResource {
		p := &limbov1alpha1.PluginResource{Name: name, DeletionDelay: delay}
		if spec != "" {
			p.Spec = &apiextensionsv1.JSON{Raw: []byte(spec)}
		}
		return p
	}
	ref := func(names ...string) []limbov1alpha1.Reference {
		var refs []limbov1alpha1.Reference
		for _, n := range names {
			refs = append(refs, limbov1alpha1.Reference{Resource: n})
		}
		return refs
	}
	cases := []struct {
		name      string
		resources func(t *testing.T) []limbov1alpha1.Resource
		wantOrder []string
		wantErrs  []Error
	}{
		{
			name: "valid chain is ordered dependencies first",
			resources: func(t *testing.T) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{
					{Name: "app", References: ref("db"), Object: obj(t, cm("app", nil))},
					{Name: "db", Object: obj(t, cm("db", nil))},
					{Name: "gc", References: ref("db"), Plugin: plugin("gc", "10m", `{}`)},
				}
			},
			wantOrder: []string{"db", "app", "gc"},
		},
		{
			name:      "empty bundle",
			resources: func(*testing.T) []limbov1alpha1.Resource { return nil },
			wantOrder: nil,
		},
		{
			name: "duplicate name",
			resources: func(t *testing.T) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{{Name: "a", Object: obj(t, cm("a", nil))}, {Name: "a", Object: obj(t, cm("b", nil))}}
			},
			wantErrs: []Error{{"a", limbov1alpha1.ReasonDuplicateName, `resource name "a" is used more than once`}},
		},
		{
			name: "both object and plugin, and neither",
			resources: func(t *testing.T) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{{Name: "a", Object: obj(t, cm("a", nil)), Plugin: plugin("gc", "", "")}, {Name: "b"}}
			},
			wantErrs: []Error{
				{"a", limbov1alpha1.ReasonInvalidResource, "a resource must have exactly one of object and plugin"},
				{"b", limbov1alpha1.ReasonInvalidResource, "a resource must have exactly one of object and plugin"},
			},
		},
		{
			name: "missing reference",
			resources: func(t *testing.T) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{{Name: "a", References: ref("nope"), Object: obj(t, cm("a", nil))}}
			},
			wantErrs: []Error{{"a", limbov1alpha1.ReasonMissingReference, `references missing resource "nope"`}},
		},
		{
			name: "cycle",
			resources: func(t *testing.T) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{
					{Name: "a", References: ref("b"), Object: obj(t, cm("a", nil))},
					{Name: "b", References: ref("a"), Object: obj(t, cm("b", nil))},
				}
			},
			wantErrs: []Error{{"a", limbov1alpha1.ReasonDependencyCycle, "dependency cycle: a -> b -> a"}},
		},
		{
			name: "cluster-scoped kind",
			resources: func(t *testing.T) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{{Name: "ns", Object: obj(t, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "x"}})}}
			},
			wantErrs: []Error{{"ns", limbov1alpha1.ReasonClusterScoped, "object: Namespace is cluster-scoped; a Bundle holds namespaced objects only"}},
		},
		{
			name: "unknown kind",
			resources: func(t *testing.T) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{{Name: "w", Object: obj(t, map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "x"}})}}
			},
			wantErrs: []Error{{"w", limbov1alpha1.ReasonUnknownKind, `object: no matches for kind "Widget" in version "example.com/v1"`}},
		},
		{
			name: "another namespace",
			resources: func(t *testing.T) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{{Name: "a", Object: obj(t, cm("a", map[string]any{"namespace": "other"}))}}
			},
			wantErrs: []Error{{"a", limbov1alpha1.ReasonWrongNamespace, `object: namespace "other" is not the Bundle's namespace "team-a"`}},
		},
		{
			name: "prohibited annotation and invalid delay",
			resources: func(t *testing.T) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{{Name: "a", Object: obj(t, cm("a", map[string]any{"annotations": map[string]any{
					limbov1alpha1.AnnotationDeletionTimestamp: "2026-01-01T00:00:00Z",
					limbov1alpha1.AnnotationDeletionDelay:     "tomorrow",
				}}))}}
			},
			wantErrs: []Error{
				{"a", limbov1alpha1.ReasonProhibitedAnnotation, `object: annotation "limbo.dev/deletionTimestamp" is set by limbo only`},
				{"a", limbov1alpha1.ReasonInvalidDeletionDelay, `object: invalid limbo.dev/deletionDelay "tomorrow": not a duration (Go syntax: 10m, 24h, 1h30m)`},
			},
		},
		{
			name: "limbo's soft-delete marks and expedite's note",
			resources: func(t *testing.T) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{{Name: "a", Object: obj(t, cm("a", map[string]any{
					"annotations": map[string]any{
						limbov1alpha1.AnnotationReleased:       "2026-01-01T00:00:00Z",
						limbov1alpha1.AnnotationPluginResource: "team-a/shop/gc",
						limbov1alpha1.AnnotationGeneratedBy:    "gen",
						limbov1alpha1.AnnotationExpeditedFrom:  "2026-01-01T00:00:00Z",
					},
					"labels": map[string]any{limbov1alpha1.LabelPendingDeletion: "true"},
				}))}}
			},
			wantErrs: []Error{
				{"a", limbov1alpha1.ReasonProhibitedAnnotation, `object: annotation "limbo.dev/released" is set by limbo only`},
				{"a", limbov1alpha1.ReasonProhibitedAnnotation, `object: annotation "limbo.dev/pluginResource" is set by limbo only`},
				{"a", limbov1alpha1.ReasonProhibitedAnnotation, `object: annotation "limbo.dev/generatedBy" is set by limbo only`},
				{"a", limbov1alpha1.ReasonProhibitedAnnotation, `object: annotation "limbo.dev/expeditedFrom" is set by limbo only`},
				{"a", limbov1alpha1.ReasonProhibitedAnnotation, `object: label "limbo.dev/pending-deletion" is set by limbo only`},
			},
		},
		{
			name: "limbo's own kinds, any version",
			resources: func(t *testing.T) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{{Name: "ts", Object: obj(t, map[string]any{"apiVersion": "limbo.dev/v1beta1", "kind": "Tombstone", "metadata": map[string]any{"name": "x"}})}}
			},
			wantErrs: []Error{{"ts", limbov1alpha1.ReasonInvalidObject, "object: a Bundle cannot hold a Tombstone"}},
		},
		{
			name: "missing name",
			resources: func(t *testing.T) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{{Name: "a", Object: obj(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{}})}}
			},
			wantErrs: []Error{{"a", limbov1alpha1.ReasonInvalidObject, "object: metadata.name is required"}},
		},
		{
			name: "no metadata at all (a misspelt key)",
			resources: func(t *testing.T) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{{Name: "a", Object: obj(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metdata": map[string]any{"name": "x"}})}}
			},
			wantErrs: []Error{{"a", limbov1alpha1.ReasonInvalidObject, `object: metadata.name is required; the template has no "metadata" (its keys: apiVersion, kind, metdata)`}},
		},
		{
			name: "names are literal: a reference marker in metadata.name or metadata.namespace",
			resources: func(t *testing.T) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{
					{Name: "app", Object: obj(t, cm("app", nil))},
					{Name: "data", References: []limbov1alpha1.Reference{{Name: "app", Resource: "app", Path: "metadata.name"}},
						Object: obj(t, cm("!{app}-data", nil))},
					{Name: "other", References: []limbov1alpha1.Reference{{Name: "ns", Resource: "app", Path: "metadata.namespace"}},
						Object: obj(t, cm("other", map[string]any{"namespace": "!{ns}"}))},
					// An escape is written as "!{x}": a name other than the template's too.
					{Name: "escaped", Object: obj(t, cm("r!!{x}", nil))},
				}
			},
			wantErrs: []Error{
				{"data", limbov1alpha1.ReasonTemplatedName, `object: metadata.name "!{app}-data" must be literal: references (!{…}) and their escapes (!!{…}) are not allowed in an object's name or namespace`},
				{"other", limbov1alpha1.ReasonTemplatedName, `object: metadata.namespace "!{ns}" must be literal: references (!{…}) and their escapes (!!{…}) are not allowed in an object's name or namespace`},
				{"other", limbov1alpha1.ReasonWrongNamespace, `object: namespace "!{ns}" is not the Bundle's namespace "team-a"`},
				{"escaped", limbov1alpha1.ReasonTemplatedName, `object: metadata.name "r!!{x}" must be literal: references (!{…}) and their escapes (!!{…}) are not allowed in an object's name or namespace`},
			},
		},
		{
			name: "same object twice",
			resources: func(t *testing.T) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{{Name: "a", Object: obj(t, cm("x", nil))}, {Name: "b", Object: obj(t, cm("x", nil))}}
			},
			wantErrs: []Error{{"b", limbov1alpha1.ReasonDuplicateObject, `declares the same object as resource "a": ConfigMap "x"`}},
		},
		{
			name: "undeclared reference marker",
			resources: func(t *testing.T) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{{Name: "a", Object: obj(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a"}, "data": map[string]any{"x": "!{host}"}})}}
			},
			wantErrs: []Error{{"a", limbov1alpha1.ReasonUndeclaredReference, "uses undeclared references: !{host}"}},
		},
		{
			name: "an escaped marker is text, no reference; an odd run of ! is one",
			resources: func(t *testing.T) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{{Name: "a", Object: obj(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a"},
					"data": map[string]any{"page.pug": "p !!{html}", "x": "!!!{host}"}})}}
			},
			wantErrs: []Error{{"a", limbov1alpha1.ReasonUndeclaredReference, "uses undeclared references: !{host}"}},
		},
		{
			name: "unknown plugin, invalid plugin spec, invalid plugin delay",
			resources: func(*testing.T) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{
					{Name: "a", Plugin: plugin("nope", "", "")},
					{Name: "b", Plugin: plugin("gc", "", `{"bad":true}`)},
					{Name: "c", Plugin: plugin("gc", "-1h", "")},
					{Name: "d", Plugin: plugin("gc", "10 minutes", "")},
				}
			},
			wantErrs: []Error{
				{"a", limbov1alpha1.ReasonUnknownPlugin, `unknown plugin "nope" (known: gc)`},
				{"b", limbov1alpha1.ReasonInvalidPluginSpec, `plugin "gc": spec.bad: Forbidden`},
				{"c", limbov1alpha1.ReasonInvalidDeletionDelay, `invalid plugin.deletionDelay "-1h": must not be negative`},
				{"d", limbov1alpha1.ReasonInvalidDeletionDelay, `invalid plugin.deletionDelay "10 minutes": not a duration (Go syntax: 10m, 24h, 1h30m)`},
			},
		},
		{
			name: "references broken whatever their values: no path, a bad path, declared twice, an invalid example",
			resources: func(t *testing.T) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{
					{Name: "db", Object: obj(t, cm("db", nil))},
					{Name: "app", References: []limbov1alpha1.Reference{
						{Name: "host", Resource: "db"},
						{Name: "port", Resource: "db", Path: "data[", Example: &apiextensionsv1.JSON{Raw: []byte(`{bad`)}},
						{Name: "port", Resource: "db", Path: "data.port"},
					}, Object: obj(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "app"},
						"data": map[string]any{"url": "http://!{host}:!{port}/"}})},
				}
			},
			wantErrs: []Error{
				{"app", limbov1alpha1.ReasonInvalidReference, `reference "host" has a name but no path: a named reference reads the value at its path`},
				{"app", limbov1alpha1.ReasonInvalidReference, `reference "port": path "data[": invalid JSONPath: unterminated array`},
				{"app", limbov1alpha1.ReasonInvalidReference, `reference "port": invalid example: invalid character 'b' looking for beginning of object key string`},
				{"app", limbov1alpha1.ReasonInvalidReference, `reference "port" is declared more than once`},
			},
		},
		{
			name: "a Secret's value injected into a ConfigMap or a plugin spec; into a Secret it may go",
			resources: func(t *testing.T) []limbov1alpha1.Resource {
				secret := func(name string, data map[string]any) map[string]any {
					return map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": name}, "data": data}
				}
				pw := []limbov1alpha1.Reference{{Name: "pw", Resource: "creds", Path: "data.password"}}
				return []limbov1alpha1.Resource{
					{Name: "creds", Object: obj(t, secret("creds", nil))},
					{Name: "copy", References: pw, Object: obj(t, secret("copy", map[string]any{"password": "!{pw}"}))},
					{Name: "leak", References: pw, Object: obj(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "leak"},
						"data": map[string]any{"password": "!{pw}"}})},
					{Name: "gc", References: pw, Plugin: plugin("gc", "", `{"password":"!{pw}"}`)},
					{Name: "order-only", References: ref("creds"), Object: obj(t, cm("order-only", nil))},
				}
			},
			wantErrs: []Error{
				{"leak", limbov1alpha1.ReasonInvalidReference, `reference "pw" reads Secret "creds": a value read from a Secret may only be injected into a Secret`},
				{"gc", limbov1alpha1.ReasonInvalidReference, `reference "pw" reads Secret "creds": a value read from a Secret may only be injected into a Secret`},
			},
		},
		{
			name: "a reference to a Secret's stringData, which the API server does not keep",
			resources: func(t *testing.T) []limbov1alpha1.Resource {
				secret := func(name string, data map[string]any) map[string]any {
					return map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": name}, "stringData": data}
				}
				refs := func(path string) []limbov1alpha1.Reference {
					return []limbov1alpha1.Reference{{Name: "pw", Resource: "creds", Path: path}}
				}
				return []limbov1alpha1.Resource{
					{Name: "creds", Object: obj(t, secret("creds", map[string]any{"password": "secret"}))},
					{Name: "copy", References: refs("stringData.password"), Object: obj(t, secret("copy", map[string]any{"password": "!{pw}"}))},
					{Name: "braced", References: refs("{.stringData['password']}"), Object: obj(t, secret("braced", map[string]any{"password": "!{pw}"}))},
					{Name: "from-data", References: refs("data.password"), Object: obj(t, secret("from-data", map[string]any{"password": "!{pw}"}))},
					{Name: "config", References: []limbov1alpha1.Reference{{Name: "v", Resource: "settings", Path: "stringData.v"}},
						Object: obj(t, cm("config", nil))},
					{Name: "settings", Object: obj(t, cm("settings", nil))},
				}
			},
			wantErrs: []Error{
				{"copy", limbov1alpha1.ReasonInvalidReference, `reference "pw" reads stringData of Secret "creds", which the API server does not keep (it stores those keys base64-encoded in data): read data.<key> instead`},
				{"braced", limbov1alpha1.ReasonInvalidReference, `reference "pw" reads stringData of Secret "creds", which the API server does not keep (it stores those keys base64-encoded in data): read data.<key> instead`},
			},
		},
		{
			name: "a template that names its controller",
			resources: func(t *testing.T) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{{Name: "a", Object: obj(t, cm("a", map[string]any{"ownerReferences": []any{map[string]any{
					"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u1", "controller": true}}}))}}
			},
			wantErrs: []Error{{"a", limbov1alpha1.ReasonInvalidObject, `object: metadata.ownerReferences: a controller owner reference (Deployment "web") is set; limbo is the controller of the objects it manages`}},
		},
		{
			name: "a plugin spec's markers are checked on their examples; one without an example is left to the pass",
			resources: func(t *testing.T) []limbov1alpha1.Resource {
				iv := func(example string) []limbov1alpha1.Reference {
					r := limbov1alpha1.Reference{Name: "iv", Resource: "db", Path: "data.interval"}
					if example != "" {
						r.Example = &apiextensionsv1.JSON{Raw: []byte(example)}
					}
					return []limbov1alpha1.Reference{r}
				}
				return []limbov1alpha1.Resource{
					{Name: "db", Object: obj(t, cm("db", nil))},
					{Name: "good", References: iv(`"5m"`), Plugin: plugin("gc", "", `{"interval":"!{iv}"}`)},
					{Name: "unknown", References: iv(""), Plugin: plugin("gc", "", `{"interval":"!{iv}"}`)},
					{Name: "bad", References: iv(`"soon"`), Plugin: plugin("gc", "", `{"interval":"!{iv}"}`)},
				}
			},
			wantErrs: []Error{
				{"bad", limbov1alpha1.ReasonInvalidPluginSpec, `plugin "gc": spec.interval: Invalid value: "soon": interval in body should match '^[0-9]+[smh]$'`},
			},
		},
		{
			name: "an escaped marker in a plugin spec is its text, checked as a value, with or without references",
			resources: func(t *testing.T) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{
					{Name: "db", Object: obj(t, cm("db", nil))},
					{Name: "alone", Plugin: plugin("gc", "", `{"interval":"!!{iv}"}`)},
					{Name: "referencing", References: []limbov1alpha1.Reference{{Resource: "db"}}, Plugin: plugin("gc", "", `{"interval":"!!{iv}"}`)},
				}
			},
			wantErrs: []Error{
				{"alone", limbov1alpha1.ReasonInvalidPluginSpec, `plugin "gc": spec.interval: Invalid value: "!{iv}": interval in body should match '^[0-9]+[smh]$'`},
				{"referencing", limbov1alpha1.ReasonInvalidPluginSpec, `plugin "gc": spec.interval: Invalid value: "!{iv}": interval in body should match '^[0-9]+[smh]$'`},
			},
		},
		{
			name: "a plugin spec is checked as the plugin gets it: integers keep their digits",
			resources: func(t *testing.T) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{{Name: "big", Plugin: plugin("gc", "", `{"n":9007199254740993,"page":"!!{x}"}`)}}
			},
			wantOrder: []string{"big"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team-a"}, Spec: limbov1alpha1.BundleSpec{Resources: tc.resources(t)}}
			plan, errs := Parse(b, mapper(), catalog{})
			if fmt.Sprint([]Error(errs)) != fmt.Sprint(tc.wantErrs) {
				t.Fatalf("errors:\n got %v\nwant %v", []Error(errs), tc.wantErrs)
			}
			if len(tc.wantErrs) > 0 {
				if plan != nil {
					t.Errorf("an invalid spec must yield no plan")
				}
				return
			}
			if fmt.Sprint(plan.Order) != fmt.Sprint(tc.wantOrder) {
				t.Errorf("order = %v, want %v", plan.Order, tc.wantOrder)
			}
			for _, res := range plan.Resources {
				if res.Template != nil && res.Template.GetNamespace() != "team-a" {
					t.Errorf("resource %s: namespace not defaulted to the Bundle's: %q", res.Name, res.Template.GetNamespace())
				}
			}
		})
	}
}

// A template copied from `kubectl get -o yaml` keeps the metadata the API
// server set; a resourceVersion in it would make every apply a precondition.
// Without a catalog no plugin is known, and the error says so.
func TestParseUnknownPluginWithoutCatalog(t *testing.T) {
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"},
		Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{{Name: "gc", Plugin: &limbov1alpha1.PluginResource{Name: "gc"}}}}}
	_, errs := Parse(b, mapper(), nil)
	if want := (Errors{{"gc", limbov1alpha1.ReasonUnknownPlugin, `unknown plugin "gc" (no plugins are registered)`}}); !reflect.DeepEqual(errs, want) {
		t.Errorf("errors %+v, want %+v", errs, want)
	}
}

func TestParseDropsServerSetMetadata(t *testing.T) {
	copied := cm("app", map[string]any{
		"resourceVersion": "1234", "uid": "0f6e7a4c-0000-4000-8000-000000000000", "generation": 3,
		"creationTimestamp": "2026-11-24T10:00:00Z", "selfLink": "/api/v1/namespaces/shop/configmaps/app",
		"managedFields": []any{map[string]any{"manager": "kubectl", "operation": "Update"}},
		"labels":        map[string]any{"app": "shop"},
	})
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "shop"},
		Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{{Name: "app", Object: obj(t, copied)}}}}
	plan, errs := Parse(b, mapper(), catalog{})
	if len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	got, err := json.Marshal(plan.Resources["app"].Template.Object["metadata"])
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"labels":{"app":"shop"},"name":"app","namespace":"shop"}`; string(got) != want {
		t.Errorf("metadata %s, want %s", got, want)
	}
}

func TestReferenced(t *testing.T) {
	ref := func(name string) []limbov1alpha1.Reference { return []limbov1alpha1.Reference{{Resource: name}} }
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"}, Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{
		{Name: "app", References: ref("db"), Object: obj(t, cm("app", nil))},
		{Name: "db", Object: obj(t, cm("db", nil))},
		{Name: "gc", References: ref("app"), Plugin: &limbov1alpha1.PluginResource{Name: "gc", Spec: &apiextensionsv1.JSON{Raw: []byte(`{}`)}}},
		{Name: "lone", Object: obj(t, cm("lone", nil))},
	}}}
	plan, errs := Parse(b, mapper(), catalog{})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for name, want := range map[string]bool{"db": true, "app": true, "gc": false, "lone": false, "missing": false} {
		if got := plan.Referenced(name); got != want {
			t.Errorf("Referenced(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestHeaderOf(t *testing.T) {
	object := func(raw string) limbov1alpha1.Resource {
		return limbov1alpha1.Resource{Name: "r", Object: &runtime.RawExtension{Raw: []byte(raw)}}
	}
	cases := []struct {
		name    string
		res     limbov1alpha1.Resource
		want    Header
		wantOK  bool
		wantErr bool
	}{
		{name: "plugin resource", res: limbov1alpha1.Resource{Name: "p", Plugin: &limbov1alpha1.PluginResource{Name: "namespace-gc"}}},
		{name: "template that does not decode", res: object(`{"kind":`), wantOK: true, wantErr: true},
		{name: "metadata of the wrong type", res: object(`{"apiVersion":"v1","kind":"ConfigMap","metadata":"a"}`), wantOK: true, wantErr: true},
		{name: "core kind", res: object(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","annotations":{"limbo.dev/adopt":"true"}},"data":{"k":"v"}}`),
			want: Header{GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Name: "a", Annotations: map[string]string{"limbo.dev/adopt": "true"}}, wantOK: true},
		{name: "grouped kind, no annotations", res: object(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"}}`),
			want: Header{GVK: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, Name: "d"}, wantOK: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := HeaderOf(tc.res)
			if ok != tc.wantOK || (err != nil) != tc.wantErr {
				t.Fatalf("HeaderOf = _, %v, %v; want ok %v, error %v", ok, err, tc.wantOK, tc.wantErr)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("HeaderOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// AdoptionKeys names the objects a Bundle's templates adopt, and only those:
// a template adopting "false", one that does not decode, and a plugin resource
// add nothing; Declares tells declaring from adopting.
func TestAdoptionKeysAndDeclares(t *testing.T) {
	object := func(raw string) limbov1alpha1.Resource {
		return limbov1alpha1.Resource{Name: "r", Object: &runtime.RawExtension{Raw: []byte(raw)}}
	}
	b := &limbov1alpha1.Bundle{Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{
		object(`{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data","annotations":{"limbo.dev/adopt":"true"}}}`),
		object(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"app","annotations":{"limbo.dev/adopt":"false"}}}`),
		object(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"}}`),
		object(`{"apiVersion":"v1","kind":"Event","metadata":{"name":"audit","annotations":{"limbo.dev/adopt":"true"}}}`),
		object(`{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"note"}}`),
		{Name: "gc", Plugin: &limbov1alpha1.PluginResource{Name: "namespace-gc"}},
	}}}
	pvc := schema.GroupKind{Kind: "PersistentVolumeClaim"}
	if got, want := AdoptionKeys(b), []string{AdoptionKey(pvc, "data"), AdoptionKey(schema.GroupKind{Kind: "Event"}, "audit")}; !reflect.DeepEqual(got, want) {
		t.Errorf("AdoptionKeys = %q, want %q", got, want)
	}
	for _, tc := range []struct {
		gk   schema.GroupKind
		name string
		want Declaration
	}{
		{pvc, "data", DeclaredToAdopt},
		{schema.GroupKind{Group: "apps", Kind: "Deployment"}, "app", DeclaredOnly},
		{schema.GroupKind{Kind: "ConfigMap"}, "settings", DeclaredOnly},
		{schema.GroupKind{Kind: "ConfigMap"}, "other", NotDeclared},
		{schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, "app", NotDeclared},
		// One stored object under two groups: listed under one, declared under the other.
		{schema.GroupKind{Group: "events.k8s.io", Kind: "Event"}, "audit", DeclaredToAdopt},
		{schema.GroupKind{Kind: "Event"}, "note", DeclaredOnly},
	} {
		if got := Declares(b, tc.gk, tc.name); got != tc.want {
			t.Errorf("Declares(%v, %q) = %v, want %v", tc.gk, tc.name, got, tc.want)
		}
	}
	broken := &limbov1alpha1.Bundle{Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{object(`{"kind":`)}}}
	if got := Declares(broken, pvc, "data"); got != DeclaredOnly {
		t.Errorf("Declares with a template that does not decode = %v, want DeclaredOnly (nothing deleted on its account)", got)
	}
	// For keeping an object, an unreadable template decides nothing: an error,
	// unless a readable one names the object.
	if got, err := DeclaresReadably(broken, pvc, "data"); got != NotDeclared || err == nil {
		t.Errorf("DeclaresReadably with a template that does not decode = %v, %v; want NotDeclared and an error", got, err)
	}
	brokenToo := &limbov1alpha1.Bundle{Spec: limbov1alpha1.BundleSpec{Resources: append([]limbov1alpha1.Resource{object(`{"kind":`)}, b.Spec.Resources...)}}
	if got, err := DeclaresReadably(brokenToo, pvc, "data"); got != DeclaredToAdopt || err != nil {
		t.Errorf("DeclaresReadably with a readable template naming it = %v, %v; want DeclaredToAdopt, no error", got, err)
	}
	if got := AdoptionKeys(broken); len(got) != 0 {
		t.Errorf("AdoptionKeys with a template that does not decode = %q, want none", got)
	}
}

// An object is known by its stored kind: a core Event and an events.k8s.io Event
// of a name are one object (the API server serves the same stored Events under
// both groups); other kinds keep their group.
func TestObjectKeyOfAKindServedUnderTwoGroups(t *testing.T) {
	core := ObjectKey(schema.GroupKind{Kind: "Event"}, "e")
	if events := ObjectKey(schema.GroupKind{Group: "events.k8s.io", Kind: "Event"}, "e"); events != core {
		t.Errorf("ObjectKey of events.k8s.io Event e = %q, of core Event e = %q: want one key", events, core)
	}
	if a, b := ObjectKey(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "d"), ObjectKey(schema.GroupKind{Group: "extensions", Kind: "Deployment"}, "d"); a == b {
		t.Errorf("ObjectKey merged two groups' Deployments: %q", a)
	}
}

// The delay a teardown keeps on an object of the Bundle that no pass applied
// is the spec's for it: its template's, or its generator resource's (a
// deletionDelay put on a Blocked generator reached its objects only once it
// planned again, so a teardown right after deleted them in its wave).
func TestDeclaredDelay(t *testing.T) {
	b := &limbov1alpha1.Bundle{Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{
		{Name: "db", Object: &runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"db","annotations":{"limbo.dev/deletionDelay":"1h"}}}`)}},
		{Name: "plain", Object: &runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"plain"}}`)}},
		{Name: "settings", Plugin: &limbov1alpha1.PluginResource{Name: "configmap", DeletionDelay: "2h"}},
		{Name: "undelayed", Plugin: &limbov1alpha1.PluginResource{Name: "configmap"}},
		{Name: "audit", Object: &runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"Event","metadata":{"name":"audit","annotations":{"limbo.dev/deletionDelay":"2h"}}}`)}},
	}}}
	configMap := schema.GroupKind{Kind: "ConfigMap"}
	object := func(name string, annotations map[string]string) metav1.Object {
		return &metav1.ObjectMeta{Name: name, Annotations: annotations}
	}
	for _, tc := range []struct {
		name string
		gk   schema.GroupKind
		obj  metav1.Object
		want string
	}{
		{"a template's", configMap, object("db", nil), "1h"},
		{"a template without one", configMap, object("plain", nil), ""},
		{"another kind of the name", schema.GroupKind{Kind: "Secret"}, object("db", nil), ""},
		{"undeclared", configMap, object("other", nil), ""},
		{"generated", configMap, object("gen", map[string]string{limbov1alpha1.AnnotationGeneratedBy: "settings"}), "2h"},
		{"generated by a resource without one", configMap, object("gen", map[string]string{limbov1alpha1.AnnotationGeneratedBy: "undelayed"}), ""},
		{"generated by a resource no longer in the spec", configMap, object("gen", map[string]string{limbov1alpha1.AnnotationGeneratedBy: "gone"}), ""},
		{"generated by a template's name", configMap, object("gen", map[string]string{limbov1alpha1.AnnotationGeneratedBy: "db"}), ""},
		{"generated, in limbo: dropped by a plan", configMap, object("gen", map[string]string{limbov1alpha1.AnnotationGeneratedBy: "settings",
			limbov1alpha1.AnnotationDeletionTimestamp: "2026-12-01T00:00:00Z"}), ""},
		{"generated, now a template's", configMap, object("db", map[string]string{limbov1alpha1.AnnotationGeneratedBy: "settings"}), "1h"},
		{"an Event listed under the other group", schema.GroupKind{Group: "events.k8s.io", Kind: "Event"}, object("audit", nil), "2h"},
	} {
		if got := DeclaredDelay(b, tc.gk, tc.obj); got != tc.want {
			t.Errorf("%s: DeclaredDelay = %q, want %q", tc.name, got, tc.want)
		}
	}
	// A generator Ready in a pass of the current spec applied its objects
	// with the delays it chose (a plugin's own shorter one): none stands in.
	applied := b.DeepCopy()
	applied.Generation, applied.Status.ObservedGeneration = 3, 3
	applied.Status.Resources = []limbov1alpha1.ResourceStatus{{Name: "settings", State: limbov1alpha1.ResourceReady}}
	if got := DeclaredDelay(applied, configMap, object("gen", map[string]string{limbov1alpha1.AnnotationGeneratedBy: "settings"})); got != "" {
		t.Errorf("generated by a generator Ready in the current spec: DeclaredDelay = %q, want none", got)
	}
}
