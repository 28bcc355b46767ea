package plugin_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/pkg/bundlespec"
	"github.com/limbo-dev/limbo/pkg/plugin"
)

// fakePlugin is a plugin that only describes itself.
type fakePlugin struct{ desc plugin.Description }

func (f fakePlugin) Describe() plugin.Description { return f.desc }
func (fakePlugin) Plan(context.Context, plugin.Request) (*plugin.Result, error) {
	return &plugin.Result{Ready: true}, nil
}

func named(name string) fakePlugin { return fakePlugin{plugin.Description{Name: name}} }

// widgetSchema is a schema using the features plugins use: required fields,
// types, minLength, maxLength, patterns, enums, arrays and closed objects. Its
// error messages are the API server's for a custom resource (checked against
// apiextensions-apiserver's validation when the registry stopped using it).
func widgetSchema() *apiextensionsv1.JSONSchemaProps {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	return &apiextensionsv1.JSONSchemaProps{
		Type:     "object",
		Required: []string{"name"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"name":     {Type: "string", MinLength: ptr.To(int64(1))},
			"interval": {Type: "string", Pattern: `^[0-9]+[smh]$`},
			"wait":     {Type: "string", Pattern: plugin.DurationPattern},
			"waits":    {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string", Pattern: plugin.DurationPattern}}},
			"mode":     {Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"fast"`)}, {Raw: []byte(`"safe"`)}}},
			"size":     {Type: "integer", Minimum: ptr.To(1.0)},
			"code":     {Type: "string", MaxLength: ptr.To(int64(3))},
			"tags":     {Type: "array", MaxItems: ptr.To(int64(2)), Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &str}},
			"ref": {Type: "object", Required: []string{"name"},
				Properties: map[string]apiextensionsv1.JSONSchemaProps{"name": str}},
		},
		AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: false},
	}
}

func newRegistry(t *testing.T, plugins ...plugin.Plugin) *plugin.Registry {
	t.Helper()
	r, err := plugin.NewRegistry(plugins...)
	if err != nil {
		t.Fatalf("NewRegistry: %v", err)
	}
	return r
}

func TestRegistryGetAndNames(t *testing.T) {
	r := newRegistry(t, named("zeta"), named("alpha"), named("mid-1"))
	if got, want := r.Names(), []string{"alpha", "mid-1", "zeta"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Names = %q, want %q", got, want)
	}
	if p, ok := r.Get("mid-1"); !ok || p.Describe().Name != "mid-1" {
		t.Errorf("Get(mid-1) = %v, %v", p, ok)
	}
	if p, ok := r.Get("nope"); ok || p != nil {
		t.Errorf("Get(nope) = %v, %v; want nil, false", p, ok)
	}
	var nilRegistry *plugin.Registry
	if p, ok := nilRegistry.Get("alpha"); ok || p != nil {
		t.Errorf("nil registry Get = %v, %v; want nil, false", p, ok)
	}
	if names := newRegistry(t).Names(); len(names) != 0 {
		t.Errorf("empty registry Names = %q", names)
	}
}

func TestRegistryRegisterErrors(t *testing.T) {
	const rfc1123 = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
	for _, tc := range []struct {
		name    string
		plugins []plugin.Plugin
		want    string
	}{
		{name: "duplicate name", plugins: []plugin.Plugin{named("dup"), named("other"), named("dup")},
			want: `plugin "dup" registered twice`},
		{name: "empty name", plugins: []plugin.Plugin{named("")}, want: `plugin name "": ` + rfc1123},
		{name: "upper case", plugins: []plugin.Plugin{named("NamespaceGC")}, want: `plugin name "NamespaceGC": ` + rfc1123},
		{name: "underscore", plugins: []plugin.Plugin{named("namespace_gc")}, want: `plugin name "namespace_gc": ` + rfc1123},
		{name: "leading dash", plugins: []plugin.Plugin{named("-gc")}, want: `plugin name "-gc": ` + rfc1123},
		{name: "too long", plugins: []plugin.Plugin{named(strings.Repeat("a", 64))},
			want: `plugin name "` + strings.Repeat("a", 64) + `": must be no more than 63 characters`},
		{name: "schema with an unparsable default",
			plugins: []plugin.Plugin{fakePlugin{plugin.Description{Name: "broken", Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object", Default: &apiextensionsv1.JSON{Raw: []byte("{bad")}}}}},
			want: `plugin "broken" schema: json: error calling MarshalJSON for type *v1.JSON: invalid character 'b' looking for beginning of object key string`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := plugin.NewRegistry(tc.plugins...)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("NewRegistry error = %v, want %q", err, tc.want)
			}
			if r != nil {
				t.Errorf("NewRegistry returned a registry with its error")
			}
		})
	}

	t.Run("Register keeps the first plugin of a name", func(t *testing.T) {
		first := fakePlugin{plugin.Description{Name: "x", DefaultPollInterval: time.Minute}}
		r := newRegistry(t, first)
		if err := r.Register(named("x")); err == nil || err.Error() != `plugin "x" registered twice` {
			t.Fatalf("Register = %v", err)
		}
		if p, _ := r.Get("x"); p.Describe().DefaultPollInterval != time.Minute {
			t.Error("the duplicate replaced the first plugin")
		}
	})
}

// A schema that cannot validate anything is a programming error, caught when the
// plugin registers rather than when a user's Bundle first uses it.
func TestRegistryRefusesInvalidPattern(t *testing.T) {
	_, err := plugin.NewRegistry(fakePlugin{plugin.Description{Name: "broken", Schema: &apiextensionsv1.JSONSchemaProps{
		Type:       "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{"a": {Type: "string", Pattern: "(("}},
	}}})
	if err == nil || !strings.HasPrefix(err.Error(), `plugin "broken" schema: `) {
		t.Fatalf("NewRegistry error = %v, want a schema error for the invalid pattern \"((\"", err)
	}
}

func TestRegistryValidateSpec(t *testing.T) {
	r := newRegistry(t, fakePlugin{plugin.Description{Name: "widget", Schema: widgetSchema()}}, named("free"))
	spec := func(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }
	for _, tc := range []struct {
		name       string
		plugin     string
		spec       *apiextensionsv1.JSON
		unresolved []string // fields whose markers wait for their values
		want       string   // "" = valid
	}{
		{name: "valid", plugin: "widget", spec: spec(`{"name":"w","interval":"5m","mode":"safe","size":3,"tags":["a"],"ref":{"name":"r"}}`)},
		{name: "minimal", plugin: "widget", spec: spec(`{"name":"w"}`)},
		{name: "longest duration", plugin: "widget", spec: spec(`{"name":"w","wait":"2562047h","waits":{"a":"2562047h47m16s"}}`)},
		{name: "duration past Go's range", plugin: "widget", spec: spec(`{"name":"w","wait":"3000000h"}`),
			want: `spec.wait: Invalid value: "3000000h": longer than the longest duration, 2562047h47m16.854775807s`},
		{name: "durations past Go's range in a map", plugin: "widget", spec: spec(`{"name":"w","waits":{"b":"9999999999s","a":"1h","c":"99999999999999999999ns"}}`),
			want: `[spec.waits.b: Invalid value: "9999999999s": longer than the longest duration, 2562047h47m16.854775807s, spec.waits.c: Invalid value: "99999999999999999999ns": longer than the longest duration, 2562047h47m16.854775807s]`},
		{name: "unknown plugin", plugin: "nope", spec: spec(`{}`),
			want: `unknown plugin "nope" (known: free, widget)`},
		{name: "nil spec is an empty object", plugin: "widget", spec: nil, want: `spec.name: Required value`},
		{name: "empty raw spec is an empty object", plugin: "widget", spec: spec(``), want: `spec.name: Required value`},
		{name: "required field", plugin: "widget", spec: spec(`{}`), want: `spec.name: Required value`},
		{name: "minLength", plugin: "widget", spec: spec(`{"name":""}`),
			want: `spec.name: Invalid value: "": name in body should be at least 1 chars long`},
		{name: "wrong type", plugin: "widget", spec: spec(`{"name":5}`),
			want: `spec.name: Invalid value: "number": name in body must be of type string: "number"`},
		{name: "unknown field", plugin: "widget", spec: spec(`{"name":"w","extra":1}`),
			want: `spec: Invalid value: "extra": .extra in body is a forbidden property`},
		{name: "pattern", plugin: "widget", spec: spec(`{"name":"w","interval":"1 hour"}`),
			want: `spec.interval: Invalid value: "1 hour": interval in body should match '^[0-9]+[smh]$'`},
		{name: "enum", plugin: "widget", spec: spec(`{"name":"w","mode":"reckless"}`),
			want: `spec.mode: Unsupported value: "reckless": supported values: "fast", "safe"`},
		{name: "minimum", plugin: "widget", spec: spec(`{"name":"w","size":0}`),
			want: `spec.size: Invalid value: 0: size in body should be greater than or equal to 1`},
		{name: "array items", plugin: "widget", spec: spec(`{"name":"w","tags":[1]}`),
			want: `spec.tags[0]: Invalid value: "number": tags[0] in body must be of type string: "number"`},
		{name: "maxLength", plugin: "widget", spec: spec(`{"name":"w","code":"abcd"}`),
			want: `spec.code: Too long: may not be more than 3 bytes`},
		{name: "maxItems", plugin: "widget", spec: spec(`{"name":"w","tags":["a","b","c"]}`),
			want: `spec.tags: Too many: 3: must have at most 2 items`},
		{name: "nested required", plugin: "widget", spec: spec(`{"name":"w","ref":{}}`), want: `spec.ref.name: Required value`},
		{name: "several errors are all reported", plugin: "widget", spec: spec(`{"mode":"x","extra":true}`),
			want: `[spec: Invalid value: "extra": .extra in body is a forbidden property, spec.mode: Unsupported value: "x": supported values: "fast", "safe", spec.name: Required value]`},
		{name: "several forbidden fields come in their names' order", plugin: "widget", spec: spec(`{"name":"w","zeta":1,"alpha":2,"mu":3}`),
			want: `[spec: Invalid value: "alpha": .alpha in body is a forbidden property, spec: Invalid value: "mu": .mu in body is a forbidden property, spec: Invalid value: "zeta": .zeta in body is a forbidden property]`},
		{name: "not an object", plugin: "widget", spec: spec(`[1]`),
			want: `spec: Invalid value: "array":  in body must be of type object: "array"`},
		{name: "null", plugin: "widget", spec: spec(`null`),
			want: `spec: Invalid value: "null":  in body must be of type object: "null"`},
		{name: "not JSON", plugin: "widget", spec: spec(`{bad`),
			want: `spec: invalid character 'b' looking for beginning of object key string`},
		{name: "a plugin without schema accepts any spec", plugin: "free", spec: spec(`{"anything":[1,2]}`)},
		{name: "an unresolved field is judged once resolved", plugin: "widget", spec: spec(`{"name":"w","interval":"!{every}"}`),
			unresolved: []string{"spec.interval"}},
		{name: "only the unresolved fields wait", plugin: "widget", spec: spec(`{"name":"w","interval":"!{every}","mode":"x"}`),
			unresolved: []string{"spec.interval"},
			want:       `spec.mode: Unsupported value: "x": supported values: "fast", "safe"`},
		{name: "marker characters as text are a value", plugin: "widget", spec: spec(`{"name":"w","interval":"!{every}"}`),
			want: `spec.interval: Invalid value: "!{every}": interval in body should match '^[0-9]+[smh]$'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := r.ValidateSpec(tc.plugin, tc.spec, tc.unresolved)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("ValidateSpec = %v, want valid", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Fatalf("ValidateSpec = %v\nwant %s", err, tc.want)
			}
		})
	}
}

// The answer to a spec is the same at every pass: it is the message of the
// Bundle's InvalidPluginSpec condition, and another order of the same errors
// would be another status write and another event. (The schema validator walks
// a map to find forbidden properties: its order changes from call to call.)
func TestRegistryValidateSpecIsDeterministic(t *testing.T) {
	r := newRegistry(t, fakePlugin{plugin.Description{Name: "widget", Schema: widgetSchema()}})
	spec := &apiextensionsv1.JSON{Raw: []byte(`{"mode":"x","a":1,"b":2,"c":3,"d":4,"e":5,"tags":[1,2,3]}`)}
	first := r.ValidateSpec("widget", spec, nil)
	if first == nil {
		t.Fatal("ValidateSpec accepted an invalid spec")
	}
	for range 50 {
		if err := r.ValidateSpec("widget", spec, nil); err == nil || err.Error() != first.Error() {
			t.Fatalf("ValidateSpec answered\n%v\nthen\n%v", first, err)
		}
	}
}

// An unknown plugin is reported with the sentinel the Bundle validator maps to
// its UnknownPlugin spec error.
func TestRegistryUnknownPluginIsErrUnknownPlugin(t *testing.T) {
	r := newRegistry(t, named("a"))
	err := r.ValidateSpec("b", nil, nil)
	if !errors.Is(err, bundlespec.ErrUnknownPlugin) {
		t.Fatalf("err = %v, want it to wrap bundlespec.ErrUnknownPlugin", err)
	}
	var catalog bundlespec.PluginCatalog = r // the registry is what the Bundle validator uses
	_ = catalog
}

// The names an unknown plugin's error lists, when there are none to list: an
// empty registry, or none at all (the Bundle reconciler's Plugins unset).
func TestRegistryUnknownPluginWithoutPlugins(t *testing.T) {
	empty := newRegistry(t)
	var none *plugin.Registry
	for _, tc := range []struct {
		name string
		r    *plugin.Registry
	}{{"empty", empty}, {"nil", none}} {
		err := tc.r.ValidateSpec("gc", nil, nil)
		if want := `unknown plugin "gc" (no plugins are registered)`; err == nil || err.Error() != want || !errors.Is(err, bundlespec.ErrUnknownPlugin) {
			t.Errorf("%s registry: err = %v, want %s wrapping bundlespec.ErrUnknownPlugin", tc.name, err, want)
		}
		if got := tc.r.UnknownPlugin("gc"); got.Error() != `unknown plugin "gc" (no plugins are registered)` {
			t.Errorf("%s registry: UnknownPlugin = %v", tc.name, got)
		}
	}
}

// Watches groups the watched kinds across plugins: one prototype per Go type, with
// the names of every plugin that watches it, in plugin name order.
func TestRegistryWatches(t *testing.T) {
	r := newRegistry(t,
		fakePlugin{plugin.Description{Name: "b", Watches: []client.Object{&corev1.Namespace{}, &corev1.Node{}}}},
		fakePlugin{plugin.Description{Name: "a", Watches: []client.Object{&corev1.Node{}}}},
		fakePlugin{plugin.Description{Name: "c", Watches: []client.Object{&appsv1.Deployment{}, &corev1.Namespace{}}}},
		named("d"),
	)
	type row struct {
		Type    string
		Plugins []string
	}
	var got []row
	for _, w := range r.Watches() {
		got = append(got, row{Type: reflect.TypeOf(w.Object).String(), Plugins: w.Plugins})
	}
	want := []row{
		{"*v1.Node", []string{"a", "b"}},
		{"*v1.Namespace", []string{"b", "c"}},
		{"*v1.Deployment", []string{"c"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Watches = %+v\nwant %+v", got, want)
	}
	if w := newRegistry(t, named("x")).Watches(); len(w) != 0 {
		t.Errorf("no watches = %+v", w)
	}
}
