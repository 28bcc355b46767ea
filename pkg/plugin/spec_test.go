package plugin_test

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/reference"
)

// ResolveSpec gives the plugin the spec a Bundle's author meant: references
// substituted, and an escaped marker written as its text whether or not the
// resource has references (the spec of one without used to be passed on raw,
// "!!{x}" and all).
func TestResolveSpec(t *testing.T) {
	db := map[string]reference.Source{"db": {Object: map[string]any{"data": map[string]any{"host": "db.local"}}}}
	hostRef := []limbov1alpha1.Reference{{Name: "host", Resource: "db", Path: "data.host"}}
	for _, tc := range []struct {
		name string
		res  limbov1alpha1.Resource
		want string
	}{
		{name: "no plugin spec is an empty object", res: limbov1alpha1.Resource{Plugin: &limbov1alpha1.PluginResource{Name: "gc"}}, want: `{}`},
		{name: "no references", res: pluginResource(`{"a":"x","b":1}`, nil), want: `{"a":"x","b":1}`},
		{name: "integers keep their precision", res: pluginResource(`{"n":9007199254740993}`, nil), want: `{"n":9007199254740993}`},
		{name: "an escape without references is text", res: pluginResource(`{"page":"p !!{html}"}`, nil), want: `{"page":"p !{html}"}`},
		{name: "a reference is substituted", res: pluginResource(`{"url":"http://!{host}/"}`, hostRef), want: `{"url":"http://db.local/"}`},
		{name: "an escape beside a reference is text", res: pluginResource(`{"url":"!!{host} !{host}"}`, hostRef), want: `{"url":"!{host} db.local"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := plugin.ResolveSpec(tc.res, db)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("ResolveSpec = %s, want %s", got, tc.want)
			}
		})
	}
}

func pluginResource(spec string, refs []limbov1alpha1.Reference) limbov1alpha1.Resource {
	return limbov1alpha1.Resource{Name: "r", References: refs,
		Plugin: &limbov1alpha1.PluginResource{Name: "gc", Spec: &apiextensionsv1.JSON{Raw: []byte(spec)}}}
}
