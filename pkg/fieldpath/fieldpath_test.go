package fieldpath

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		path, want, err string
	}{
		{path: "status.phase", want: "status.phase"},
		{path: ".status.phase", want: "status.phase"},
		{path: "{.status.phase}", want: "status.phase"},
		{path: "{status.phase}", want: "status.phase"},
		{path: "$.status.phase", want: "status.phase"},
		{path: "{$.status.phase}", want: "status.phase"},
		{path: " { .status.phase } ", want: "status.phase"},
		{path: "['status'].phase", want: "['status'].phase"},
		{path: "$['status'].phase", want: "['status'].phase"},
		{path: "{.['status'].phase}", want: "['status'].phase"},
		{path: `status.conditions[?(@.type=="Ready")].status`, want: `status.conditions[?(@.type=="Ready")].status`},
		{path: `{.status.conditions[?(@.type=="Ready")].status}`, want: `status.conditions[?(@.type=="Ready")].status`},
		{path: "", err: "the path is empty"},
		{path: "{}", err: "the path is empty"},
		{path: "{.}", err: "the path is empty"},
		{path: "$", err: "the path is empty"},
		{path: "..phase", err: "recursive descent"},
		{path: "$..phase", err: "recursive descent"},
		{path: "{..phase}", err: "recursive descent"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, err := Normalize(tt.path)
			switch {
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("Normalize(%q) = %q, %v; want an error containing %q", tt.path, got, err, tt.err)
			case tt.err == "" && err != nil:
				t.Fatalf("Normalize(%q): %v", tt.path, err)
			case got != tt.want:
				t.Errorf("Normalize(%q) = %q, want %q", tt.path, got, tt.want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	obj := map[string]interface{}{
		"status": map[string]interface{}{
			"phase": "Running",
			"conditions": []interface{}{
				map[string]interface{}{"type": "Ready", "status": "True"},
			},
		},
	}
	tests := []struct {
		path      string
		allowMiss bool
		want, err string
	}{
		{path: "status.phase", want: "[Running]"},
		{path: ".status.phase", want: "[Running]"},
		{path: "{.status.phase}", want: "[Running]"},
		{path: "$.status.phase", want: "[Running]"},
		{path: "['status'].phase", want: "[Running]"},
		{path: `{.status.conditions[?(@.type=="Ready")].status}`, want: "[True]"},
		{path: "status.missing", allowMiss: true, want: "[]"},
		{path: "status.missing", err: "missing is not found"},
		{path: "status.phase[", err: "invalid JSONPath: "},
		{path: "status.phase}{.a", err: "braces are not allowed"},
		{path: "data.host}", err: "braces are not allowed"},
		// An opening brace alone is not a template's: nothing is cut off the
		// path's end (it read status.phas).
		{path: "{.status.phase", err: "invalid JSONPath: "},
		{path: "..phase", err: "recursive descent"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			jp, err := Parse(tt.path, tt.allowMiss)
			var values []interface{}
			if err == nil {
				var results [][]reflect.Value
				results, err = jp.FindResults(obj)
				for _, set := range results {
					for _, v := range set {
						values = append(values, v.Interface())
					}
				}
			}
			switch {
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("Parse(%q) gave %v, %v; want an error containing %q", tt.path, values, err, tt.err)
			case tt.err == "" && err != nil:
				t.Fatalf("Parse(%q): %v", tt.path, err)
			case tt.err == "" && fmt.Sprint(values) != tt.want:
				t.Errorf("Parse(%q) yields %v, want %s", tt.path, values, tt.want)
			}
		})
	}
}

func TestStartsAt(t *testing.T) {
	tests := []struct {
		path, field string
		want        bool
	}{
		{path: "status", field: "status", want: true},
		{path: "status.phase", field: "status", want: true},
		{path: "{.status.loadBalancer.ingress[0].ip}", field: "status", want: true},
		{path: "$.status.phase", field: "status", want: true},
		{path: "['status'].phase", field: "status", want: true},
		{path: `["status"]`, field: "status", want: true},
		{path: "status[0]", field: "status", want: true},
		{path: "statusText", field: "status", want: false},
		{path: "spec.status", field: "status", want: false},
		{path: "['statusText']", field: "status", want: false},
		{path: "stringData.password", field: "stringData", want: true},
		{path: "data.password", field: "stringData", want: false},
		{path: "", field: "status", want: false},
		{path: "..status", field: "status", want: false},
	}
	for _, tt := range tests {
		if got := StartsAt(tt.path, tt.field); got != tt.want {
			t.Errorf("StartsAt(%q, %q) = %v, want %v", tt.path, tt.field, got, tt.want)
		}
	}
}

// TypeOf names a JSON value's type as messages say it: "a number", not "float64".
func TestTypeOf(t *testing.T) {
	for _, tt := range []struct {
		v    any
		want string
	}{
		{nil, "null"},
		{"Running", "a string"},
		{true, "a boolean"},
		{int64(3), "a number"},
		{1.5, "a number"},
		{json.Number("3"), "a number"},
		{[]any{"a"}, "a list"},
		{map[string]any{"a": 1}, "an object"},
		{int8(3), "a int8"}, // not from JSON: its Go type
	} {
		if got := TypeOf(tt.v); got != tt.want {
			t.Errorf("TypeOf(%#v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

// A path longer than MaxLength is refused before the JSONPath parser sees it:
// that parser recurses once per token, and a path of a few hundred thousand
// spaces or fields took seconds and hundreds of MB, one of a million and a
// half overflowed the stack — a fatal error no recovery catches, which
// stopped the controller and its standby in turn.
func TestParseRefusesALongPath(t *testing.T) {
	for _, path := range []string{
		"data" + strings.Repeat(" ", 300_000) + "host",
		strings.Repeat("a.", 150_000) + "a",
		"data." + strings.Repeat("x", MaxLength),
	} {
		_, err := Parse(path, false)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("longer than %d characters", MaxLength)) {
			t.Errorf("Parse of a %d-character path: %v, want it refused as too long", len(path), err)
		}
	}
	if _, err := Parse("data."+strings.Repeat("x", MaxLength-len("data.")), false); err != nil {
		t.Errorf("a path of MaxLength characters: %v", err)
	}
}
