package configmap_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/plugin/plugintest"
	"github.com/limbo-dev/limbo/pkg/plugins/configmap"
)

func plan(t *testing.T, spec string) *plugin.Result {
	t.Helper()
	res, err := configmap.New().Plan(context.Background(), plugin.Request{Resource: "settings", Spec: []byte(spec)})
	if err != nil {
		t.Fatalf("Plan(%s): %v", spec, err)
	}
	return res
}

func TestDescribe(t *testing.T) {
	d := configmap.New().Describe()
	if d.Name != "configmap" || configmap.Name != "configmap" {
		t.Errorf("Name = %q", d.Name)
	}
	if len(d.Watches) != 0 || d.DefaultPollInterval != 0 {
		t.Errorf("a generator watches nothing and never polls: %+v", d)
	}
	if _, ok := plugin.Plugin(configmap.New()).(plugin.ExternalDeleter); ok {
		t.Error("a generator has no external items to delete")
	}
}

// The generator path: spec → exactly one ConfigMap, prefix applied to every key,
// no namespace (the Bundle's is defaulted by the reconciler), no inventory.
func TestPlanGeneratesOneConfigMap(t *testing.T) {
	for _, tc := range []struct {
		name, spec, want string
	}{
		{
			name: "data with prefix",
			spec: `{"name":"app-settings","data":{"LOG_LEVEL":"info","A":"1"},"prefix":"APP_"}`,
			want: `{"apiVersion":"v1","data":{"APP_A":"1","APP_LOG_LEVEL":"info"},"kind":"ConfigMap","metadata":{"name":"app-settings"}}`,
		},
		{
			name: "no prefix",
			spec: `{"name":"plain","data":{"k":"v"}}`,
			want: `{"apiVersion":"v1","data":{"k":"v"},"kind":"ConfigMap","metadata":{"name":"plain"}}`,
		},
		{
			name: "no data is an empty ConfigMap",
			spec: `{"name":"empty"}`,
			want: `{"apiVersion":"v1","data":{},"kind":"ConfigMap","metadata":{"name":"empty"}}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := plan(t, tc.spec)
			if !res.Ready || res.Message != "" || res.PollAfter != 0 || res.Inventory != nil {
				t.Errorf("result = %+v, want Ready, no message, no poll, no inventory", res)
			}
			if len(res.Objects) != 1 {
				t.Fatalf("%d objects, want 1", len(res.Objects))
			}
			got, err := json.Marshal(res.Objects[0].Object)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("object = %s\nwant     %s", got, tc.want)
			}
			if res.Objects[0].GetNamespace() != "" {
				t.Errorf("namespace %q set; the reconciler defaults it to the Bundle's", res.Objects[0].GetNamespace())
			}
		})
	}
}

// Plan is pure: the same spec gives the same object, whatever the order of its keys.
func TestPlanIsDeterministic(t *testing.T) {
	a := plan(t, `{"name":"x","prefix":"P_","data":{"b":"2","a":"1","c":"3"}}`)
	b := plan(t, `{"data":{"c":"3","a":"1","b":"2"},"prefix":"P_","name":"x"}`)
	for range 20 {
		c := plan(t, `{"name":"x","prefix":"P_","data":{"b":"2","a":"1","c":"3"}}`)
		if !reflect.DeepEqual(a.Objects[0].Object, c.Objects[0].Object) {
			t.Fatalf("two plans of one spec differ:\n%v\n%v", a.Objects[0].Object, c.Objects[0].Object)
		}
	}
	if !reflect.DeepEqual(a.Objects[0].Object, b.Objects[0].Object) {
		t.Errorf("key order changed the object:\n%v\n%v", a.Objects[0].Object, b.Objects[0].Object)
	}
	// Each plan returns a fresh object: the reconciler may mutate it (namespace,
	// labels, owner) without affecting the next plan.
	a.Objects[0].SetNamespace("mutated")
	if b := plan(t, `{"name":"x"}`); b.Objects[0].GetNamespace() != "" {
		t.Error("a plan's object is shared between calls")
	}
}

func TestPlanRejectsBadJSON(t *testing.T) {
	if _, err := configmap.New().Plan(context.Background(), plugin.Request{Spec: []byte(`{"name":`)}); err == nil {
		t.Error("Plan accepted a truncated spec")
	}
}

// The schema, as the Bundle reconciler checks it before Plan runs.
func TestSchema(t *testing.T) {
	plugintest.ExpectSpecs(t, configmap.New(), []plugintest.SpecCase{
		{Spec: `{"name":"x","data":{"a":"b"},"prefix":"P"}`},
		{Spec: `{}`, Want: `spec.name: Required value`},
		{Spec: `{"name":""}`, Want: `spec.name: Invalid value: "": name in body should be at least 1 chars long`},
		{Spec: `{"name":"x","data":{"a":1}}`, Want: `spec.data.a: Invalid value: "number": data.a in body must be of type string: "number"`},
		{Spec: `{"name":"x","prefx":"P"}`, Want: `spec: Invalid value: "prefx": .prefx in body is a forbidden property`},
	})
}
