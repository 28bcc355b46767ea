package plugin_test

import (
	"encoding/json"
	"errors"
	"net/netip"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/limbo-dev/limbo/pkg/plugin"
)

// checkedPlugin is a plugin with a SpecChecker: a CIDR in cidr, and names
// that make the check fail in each of the shapes it may return, or panic.
type checkedPlugin struct {
	fakePlugin
	seen *[]string // the specs CheckSpec was called with
}

func (c checkedPlugin) CheckSpec(raw []byte) error {
	*c.seen = append(*c.seen, string(raw))
	var spec struct{ Name, CIDR string }
	if err := json.Unmarshal(raw, &spec); err != nil {
		return err
	}
	switch spec.Name {
	case "plain":
		return errors.New("not usable")
	case "panic":
		panic("boom")
	case "two":
		// Out of order: the registry sorts them (a plugin's errors from a map).
		return field.ErrorList{field.Required(field.NewPath("spec", "b"), ""), field.Required(field.NewPath("spec", "a"), "")}.ToAggregate()
	}
	if spec.CIDR == "" {
		return nil
	}
	if _, err := netip.ParsePrefix(spec.CIDR); err != nil {
		return field.Invalid(field.NewPath("spec", "cidr"), spec.CIDR, "not a CIDR")
	}
	return nil
}

// A spec that passes the schema but not the plugin's own check is a spec error
// of the same shape as the schema's; the check never sees a spec the schema
// refused, nor one with a reference still unresolved.
func TestRegistryValidateSpecChecksWithSpecChecker(t *testing.T) {
	schema := &apiextensionsv1.JSONSchemaProps{Type: "object", Required: []string{"name"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"name": {Type: "string", MinLength: ptr.To(int64(1))},
			"cidr": {Type: "string"},
		},
		AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: false},
	}
	var seen []string
	r := newRegistry(t,
		checkedPlugin{fakePlugin{plugin.Description{Name: "checked", Schema: schema}}, &seen},
		checkedPlugin{fakePlugin{plugin.Description{Name: "schemaless"}}, &seen})
	for _, tc := range []struct {
		name, plugin string
		spec         *apiextensionsv1.JSON
		unresolved   []string
		want         string // "" = valid
		checked      string // the spec CheckSpec saw; "" = not called
	}{
		{name: "valid", plugin: "checked", spec: &apiextensionsv1.JSON{Raw: []byte(`{"name":"a","cidr":"10.0.0.0/8"}`)},
			checked: `{"name":"a","cidr":"10.0.0.0/8"}`},
		{name: "field error", plugin: "checked", spec: &apiextensionsv1.JSON{Raw: []byte(`{"name":"a","cidr":"nonsense"}`)},
			want: `spec.cidr: Invalid value: "nonsense": not a CIDR`, checked: `{"name":"a","cidr":"nonsense"}`},
		{name: "plain error", plugin: "checked", spec: &apiextensionsv1.JSON{Raw: []byte(`{"name":"plain"}`)},
			want: `spec: Invalid value: not usable`, checked: `{"name":"plain"}`},
		{name: "several field errors", plugin: "checked", spec: &apiextensionsv1.JSON{Raw: []byte(`{"name":"two"}`)},
			want: `[spec.a: Required value, spec.b: Required value]`, checked: `{"name":"two"}`},
		// A bug of the check (a nil pointer of an omitted field) is the spec's
		// error, not the end of the pass or of the webhook's request.
		{name: "a panic", plugin: "checked", spec: &apiextensionsv1.JSON{Raw: []byte(`{"name":"panic"}`)},
			want: `spec: Invalid value: the plugin panicked (a bug; the stack is in the controller's log): boom`, checked: `{"name":"panic"}`},
		{name: "schema first", plugin: "checked", spec: &apiextensionsv1.JSON{Raw: []byte(`{"cidr":"nonsense"}`)},
			want: `spec.name: Required value`},
		{name: "unresolved reference", plugin: "checked", spec: &apiextensionsv1.JSON{Raw: []byte(`{"name":"a","cidr":"!{cidr}"}`)},
			unresolved: []string{"spec.cidr"}},
		// A marker's characters that are text (an escape, substituted by the
		// caller) are a value like any other: checked.
		{name: "marker characters as text", plugin: "checked", spec: &apiextensionsv1.JSON{Raw: []byte(`{"name":"a","cidr":"!{cidr}"}`)},
			want: `spec.cidr: Invalid value: "!{cidr}": not a CIDR`, checked: `{"name":"a","cidr":"!{cidr}"}`},
		{name: "not JSON", plugin: "checked", spec: &apiextensionsv1.JSON{Raw: []byte(`{bad`)},
			want: `spec: invalid character 'b' looking for beginning of object key string`},
		{name: "without a schema", plugin: "schemaless", spec: &apiextensionsv1.JSON{Raw: []byte(`{"cidr":"nonsense"}`)},
			want: `spec.cidr: Invalid value: "nonsense": not a CIDR`, checked: `{"cidr":"nonsense"}`},
		{name: "no spec is an empty object", plugin: "schemaless", spec: nil, checked: `{}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen = nil
			err := r.ValidateSpec(tc.plugin, tc.spec, tc.unresolved)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("ValidateSpec = %v, want valid", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Errorf("ValidateSpec = %v\nwant %s", err, tc.want)
			}
			switch {
			case tc.checked == "" && len(seen) > 0:
				t.Errorf("CheckSpec called with %q", seen)
			case tc.checked != "" && (len(seen) != 1 || seen[0] != tc.checked):
				t.Errorf("CheckSpec called with %q, want once with %s", seen, tc.checked)
			}
		})
	}
}

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		value    *string
		positive bool
		want     time.Duration
		err      string
	}{
		{value: nil, want: time.Minute},
		{value: nil, positive: true, want: time.Minute},
		{value: ptr.To("90s"), want: 90 * time.Second},
		{value: ptr.To("0"), want: 0},
		{value: ptr.To("0s"), positive: true, err: `spec.every: Invalid value: "0s": must be a positive duration (90s, 1h30m)`},
		{value: ptr.To("1ns"), positive: true, want: time.Nanosecond},
		{value: ptr.To("-1s"), err: `spec.every: Invalid value: "-1s": must be a duration ≥ 0 (0s, 90s, 1h30m)`},
		{value: ptr.To("soon"), positive: true, err: `spec.every: Invalid value: "soon": must be a positive duration (90s, 1h30m)`},
		{value: ptr.To("3000000h"), err: `spec.every: Invalid value: "3000000h": must be a duration ≥ 0 (0s, 90s, 1h30m)`},
	} {
		got, err := plugin.ParseDuration("every", tc.value, time.Minute, tc.positive)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%v (positive %v) = %v, %v; want %v", ptr.Deref(tc.value, "nil"), tc.positive, got, err, tc.want)
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("%v (positive %v): error %v, want %s", ptr.Deref(tc.value, "nil"), tc.positive, err, tc.err)
		}
	}
}

// ParseDurationIn refuses what is outside its range, naming the field and the
// bounds; 0 only where it disables; the default is not checked.
func TestParseDurationIn(t *testing.T) {
	poll := plugin.DurationRange{Min: 10 * time.Second, Max: 365 * 24 * time.Hour}
	gc := plugin.DurationRange{Min: 10 * time.Second, ZeroDisables: true}
	for _, tc := range []struct {
		value *string
		r     plugin.DurationRange
		want  time.Duration
		err   string
	}{
		{value: nil, r: poll, want: time.Minute},
		{value: ptr.To("10s"), r: poll, want: 10 * time.Second},
		{value: ptr.To("8760h"), r: poll, want: 8760 * time.Hour},
		{value: ptr.To("1ns"), r: poll, err: `spec.every: Invalid value: "1ns": must be a duration of at least 10s and at most 8760h0m0s (90s, 1h30m)`},
		{value: ptr.To("9.999s"), r: poll, err: `spec.every: Invalid value: "9.999s": must be a duration of at least 10s and at most 8760h0m0s (90s, 1h30m)`},
		{value: ptr.To("0s"), r: poll, err: `spec.every: Invalid value: "0s": must be a duration of at least 10s and at most 8760h0m0s (90s, 1h30m)`},
		{value: ptr.To("8760h1ns"), r: poll, err: `spec.every: Invalid value: "8760h1ns": must be a duration of at least 10s and at most 8760h0m0s (90s, 1h30m)`},
		{value: ptr.To("2562047h"), r: poll, err: `spec.every: Invalid value: "2562047h": must be a duration of at least 10s and at most 8760h0m0s (90s, 1h30m)`},
		{value: ptr.To("3000000h"), r: poll, err: `spec.every: Invalid value: "3000000h": must be a duration of at least 10s and at most 8760h0m0s (90s, 1h30m)`},
		{value: ptr.To("-1m"), r: poll, err: `spec.every: Invalid value: "-1m": must be a duration of at least 10s and at most 8760h0m0s (90s, 1h30m)`},
		{value: ptr.To("0s"), r: gc, want: 0},
		{value: ptr.To("0"), r: gc, want: 0},
		{value: ptr.To("2562047h"), r: gc, want: 2562047 * time.Hour},
		{value: ptr.To("1ns"), r: gc, err: `spec.every: Invalid value: "1ns": must be 0s (disabled) or a duration of at least 10s (90s, 1h30m)`},
		{value: ptr.To("soon"), r: gc, err: `spec.every: Invalid value: "soon": must be 0s (disabled) or a duration of at least 10s (90s, 1h30m)`},
		{value: ptr.To("1h"), r: plugin.DurationRange{Min: 2 * time.Hour}, err: `spec.every: Invalid value: "1h": must be a duration of at least 2h0m0s`},
		{value: ptr.To("1h"), r: plugin.DurationRange{Max: time.Minute}, err: `spec.every: Invalid value: "1h": must be a duration ≥ 0 and at most 1m0s`},
		{value: ptr.To("1ns"), r: plugin.DurationRange{}, want: time.Nanosecond},
		{value: ptr.To("-1ns"), r: plugin.DurationRange{}, err: `spec.every: Invalid value: "-1ns": must be a duration ≥ 0 (90s, 1h30m)`},
	} {
		got, err := plugin.ParseDurationIn("every", tc.value, time.Minute, tc.r)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%v in %+v = %v, %v; want %v", ptr.Deref(tc.value, "nil"), tc.r, got, err, tc.want)
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("%v in %+v: error %v, want %s", ptr.Deref(tc.value, "nil"), tc.r, err, tc.err)
		}
	}
}
