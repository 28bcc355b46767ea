package reference

import (
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// FuzzResolvePath: any path into any object resolves to exactly one value, or
// fails with an error naming the reference; never a panic. A value found is a
// copy (changing it leaves the object alone) and is found again the same.
func FuzzResolvePath(f *testing.F) {
	object := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"db","labels":{"app.kubernetes.io/name":"db"}},"data":{"host":"db.internal","port":"5432"},"spec":{"ports":[{"port":80},{"port":443}],"replicas":3,"nested":{"a":{"b":[1,[2,3]]}}}}`
	for _, path := range []string{"data.host", "data.port", "metadata.name", "['data']['host']", "metadata.labels['app\\.kubernetes\\.io/name']",
		"spec.ports[0].port", "spec.ports[*].port", "spec.ports[-1:]", "spec.ports[?(@.port==80)].port", "spec.replicas", "spec.nested",
		"spec.nested.a.b[1][0]", "$.data.host", ".data", "{data.host}", "data.host}", "data[", "spec.ports[1:0:-1]", "spec.ports[0:9223372036854775807]",
		"spec..port", "data.missing", "", "spec.ports[?(@.port>'a')]", "range", "spec.ports[-9]"} {
		f.Add(path, object)
	}
	f.Add("a", `{"a":null}`)
	f.Add("a[0]", `{"a":[]}`)
	f.Fuzz(func(t *testing.T, path, objectJSON string) {
		var obj map[string]interface{}
		if err := utiljson.Unmarshal([]byte(objectJSON), &obj); err != nil || obj == nil {
			return
		}
		before, _ := json.Marshal(obj)
		refs := []v1alpha1.Reference{{Name: "v", Resource: "src", Path: path}}
		values, err := Resolve(refs, map[string]Source{"src": {Object: obj}}, false)
		if err != nil {
			if !strings.Contains(err.Error(), `reference "v"`) {
				t.Errorf("Resolve error %q does not name the reference", err)
			}
			return
		}
		value, ok := values["v"]
		if !ok {
			t.Fatalf("Resolve(%q) succeeded without a value", path)
		}
		again, err := Resolve(refs, map[string]Source{"src": {Object: obj}}, false)
		if err != nil || !reflect.DeepEqual(again["v"], value) {
			t.Fatalf("Resolve(%q) twice: %v then %v (%v)", path, value, again["v"], err)
		}
		scribble(value.Data)
		if after, _ := json.Marshal(obj); string(after) != string(before) {
			t.Fatalf("changing the value of %q changed the source object:\n%s\n%s", path, before, after)
		}
	})
}

// scribble changes every map and list inside v.
func scribble(v interface{}) {
	switch v := v.(type) {
	case map[string]interface{}:
		for k, item := range v {
			scribble(item)
			v[k] = "scribbled"
		}
		v["scribbled"] = true
	case []interface{}:
		for i, item := range v {
			scribble(item)
			v[i] = "scribbled"
		}
	}
}

// FuzzSubstitute: substituting !{…} markers in any string with any value
// succeeds exactly when every marker names a declared reference (within the
// bound of what is substituted), leaves the
// template unchanged, keeps a whole-string marker's type, is the identity on
// strings without markers, and never panics.
// escapedMarker matches the markers of a string with two or more ! (see marker);
// in a string without markers, each is one with an even run, that is text.
var escapedMarker = regexp.MustCompile(`!!+\{[^{}]+\}`)

func FuzzSubstitute(f *testing.F) {
	for _, seed := range [][2]string{
		{"!{a}", `"db.internal"`}, {"!{a}", `5432`}, {"!{a}", `{"x":[1,true,null]}`}, {"host=!{a}:!{b}", `"h"`},
		{"!{a}!{a}", `1.5`}, {"no markers", `1`}, {"!{}", `1`}, {"!{a", `1`}, {"!{!{a}}", `"x"`}, {"!{missing}", `1`},
		{"!{a}}", `"<&>"`}, {"!!{a}", `1`}, {"!!{a}!{b}", `1`}, {"{!{a}}", `null`}, {"!{ a }", `1`}, {"!{a}\n!{b}", `[]`}, {"\xff!{a}", `"\u0000"`},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, template, valueJSON string) {
		var data interface{}
		if err := utiljson.Unmarshal([]byte(valueJSON), &data); err != nil {
			return
		}
		obj := map[string]interface{}{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]interface{}{"name": "app"},
			"data":     map[string]interface{}{"k": template},
			"spec":     map[string]interface{}{"list": []interface{}{template, int64(1)}},
		}
		before, _ := json.Marshal(obj)
		values := Values{"a": {Data: data}, "b": {Data: "text"}}
		out, err := Substitute(obj, values)
		if after, _ := json.Marshal(obj); string(after) != string(before) {
			t.Fatalf("Substitute changed its input:\n%s\n%s", before, after)
		}
		if errors.Is(err, ErrTooLarge) {
			return // a template and value of megabytes: TestSubstituteBound's
		}
		declared := true
		for _, name := range Markers(obj) {
			if _, ok := values[name]; !ok {
				declared = false
			}
		}
		if declared != (err == nil) {
			t.Fatalf("template %q: markers %v declared=%v, but Substitute error = %v", template, Markers(obj), declared, err)
		}
		if err != nil {
			return
		}
		got := out["data"].(map[string]interface{})["k"]
		if got2 := out["spec"].(map[string]interface{})["list"].([]interface{})[0]; !reflect.DeepEqual(got, got2) {
			t.Errorf("the same template gave %#v and %#v", got, got2)
		}
		switch {
		case len(Markers(obj)) == 0 && !escapedMarker.MatchString(template):
			if got != template {
				t.Errorf("a template without markers %q became %#v", template, got)
			}
		case len(Markers(obj)) == 0:
			want := escapedMarker.ReplaceAllStringFunc(template, func(m string) string {
				brace := strings.Index(m, "{")
				return m[:brace/2] + m[brace:]
			})
			if got != want {
				t.Errorf("a template with escaped markers only %q became %#v, want %q", template, got, want)
			}
		case wholeMarker.MatchString(template) && strings.TrimSuffix(strings.TrimPrefix(template, "!{"), "}") == "a":
			if !reflect.DeepEqual(got, data) {
				t.Errorf("whole marker %q became %#v, want %#v with its type", template, got, data)
			}
		default:
			if _, ok := got.(string); !ok {
				t.Errorf("interpolated %q became %T, want a string", template, got)
			}
		}
	})
}
