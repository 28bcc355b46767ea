package reference

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// config is the live object of the "db-config" resource of the tests.
func config() map[string]interface{} {
	return map[string]interface{}{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   map[string]interface{}{"name": "db-config"},
		"data":       map[string]interface{}{"host": "db.internal"},
		"spec": map[string]interface{}{
			"replicas": int64(3),
			"ratio":    0.5,
			"enabled":  true,
			"nothing":  nil,
			"labels":   map[string]interface{}{"app": "db"},
			"zones":    []interface{}{"a", "b"},
			"ports": []interface{}{
				map[string]interface{}{"name": "http", "port": int64(80)},
				map[string]interface{}{"name": "https", "port": int64(443)},
			},
		},
		"status": map[string]interface{}{
			"conditions": []interface{}{
				map[string]interface{}{"type": "Ready", "status": "True"},
			},
		},
	}
}

// secret is the live object of the "db-secret" resource of the tests.
func secret() map[string]interface{} {
	return map[string]interface{}{
		"apiVersion": "v1",
		"kind":       "Secret",
		"metadata":   map[string]interface{}{"name": "db-secret"},
		"data":       map[string]interface{}{"password": "aHVudGVyMg=="},
	}
}

func example(raw string) *apiextensionsv1.JSON {
	return &apiextensionsv1.JSON{Raw: []byte(raw)}
}

// checkError fails the test unless err's message is want, or err is nil when
// want is empty.
func checkError(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("error = %q, want none", err)
	case want != "" && err == nil:
		t.Fatalf("error = nil, want %q", want)
	case want != "" && err.Error() != want:
		t.Fatalf("error = %q, want %q", err, want)
	}
}

func TestResolve(t *testing.T) {
	live := map[string]Source{
		"db-config": {Object: config()},
		"db-secret": {Object: secret(), Secret: true},
	}
	tests := []struct {
		name        string
		refs        []v1alpha1.Reference
		sources     map[string]Source
		useExamples bool
		want        Values
		wantErr     string
		// wantNotAvailable says that the error wraps ErrNotAvailable.
		wantNotAvailable bool
		// wantStatusNotSet says that the error wraps ErrStatusNotSet.
		wantStatusNotSet bool
	}{
		{
			name: "string",
			refs: []v1alpha1.Reference{{Name: "host", Resource: "db-config", Path: "data.host"}},
			want: Values{"host": {Data: "db.internal"}},
		},
		{
			name: "int64 keeps its type",
			refs: []v1alpha1.Reference{{Name: "replicas", Resource: "db-config", Path: "spec.replicas"}},
			want: Values{"replicas": {Data: int64(3)}},
		},
		{
			name: "float64 keeps its type",
			refs: []v1alpha1.Reference{{Name: "ratio", Resource: "db-config", Path: "spec.ratio"}},
			want: Values{"ratio": {Data: 0.5}},
		},
		{
			name: "bool keeps its type",
			refs: []v1alpha1.Reference{{Name: "enabled", Resource: "db-config", Path: "spec.enabled"}},
			want: Values{"enabled": {Data: true}},
		},
		{
			name: "null",
			refs: []v1alpha1.Reference{{Name: "nothing", Resource: "db-config", Path: "spec.nothing"}},
			want: Values{"nothing": {Data: nil}},
		},
		{
			name: "map keeps its type",
			refs: []v1alpha1.Reference{{Name: "labels", Resource: "db-config", Path: "spec.labels"}},
			want: Values{"labels": {Data: map[string]interface{}{"app": "db"}}},
		},
		{
			name: "slice keeps its type",
			refs: []v1alpha1.Reference{{Name: "zones", Resource: "db-config", Path: "spec.zones"}},
			want: Values{"zones": {Data: []interface{}{"a", "b"}}},
		},
		{
			name: "index",
			refs: []v1alpha1.Reference{{Name: "type", Resource: "db-config", Path: "status.conditions[0].type"}},
			want: Values{"type": {Data: "Ready"}},
		},
		{
			name: "filter expression",
			refs: []v1alpha1.Reference{{Name: "port", Resource: "db-config", Path: `spec.ports[?(@.name=="https")].port`}},
			want: Values{"port": {Data: int64(443)}},
		},
		{
			name: "path with a leading dot, as kubectl writes it",
			refs: []v1alpha1.Reference{{Name: "host", Resource: "db-config", Path: ".data.host"}},
			want: Values{"host": {Data: "db.internal"}},
		},
		{
			name: "path in braces, as kubectl -o jsonpath writes it",
			refs: []v1alpha1.Reference{{Name: "host", Resource: "db-config", Path: "{.data.host}"}},
			want: Values{"host": {Data: "db.internal"}},
		},
		{
			name: "path starting with a bracket",
			refs: []v1alpha1.Reference{{Name: "host", Resource: "db-config", Path: "['data'].host"}},
			want: Values{"host": {Data: "db.internal"}},
		},
		{
			name: "several references",
			refs: []v1alpha1.Reference{
				{Name: "host", Resource: "db-config", Path: "data.host"},
				{Name: "port", Resource: "db-config", Path: "spec.ports[0].port"},
			},
			want: Values{"host": {Data: "db.internal"}, "port": {Data: int64(80)}},
		},
		{
			name: "unnamed reference is ignored",
			refs: []v1alpha1.Reference{
				{Resource: "not-there", Path: "data.nope["},
				{Name: "host", Resource: "db-config", Path: "data.host"},
			},
			want: Values{"host": {Data: "db.internal"}},
		},
		{
			name: "no references",
			want: Values{},
		},
		{
			name:    "missing key",
			refs:    []v1alpha1.Reference{{Name: "dbhost", Resource: "db-config", Path: "data.nope"}},
			wantErr: `reference "dbhost": path "data.nope" in resource "db-config": nope is not found`,
		},
		{
			name:             "index out of range in the status: not set yet",
			refs:             []v1alpha1.Reference{{Name: "type", Resource: "db-config", Path: "status.conditions[1].type"}},
			wantErr:          `reference "type": path "status.conditions[1].type" in resource "db-config": array index out of bounds: index 1, length 1`,
			wantStatusNotSet: true,
		},
		{
			name:    "index out of range in the spec",
			refs:    []v1alpha1.Reference{{Name: "zone", Resource: "db-config", Path: "spec.zones[2]"}},
			wantErr: `reference "zone": path "spec.zones[2]" in resource "db-config": array index out of bounds: index 2, length 2`,
		},
		{
			name:             "missing key in the status: not set yet",
			refs:             []v1alpha1.Reference{{Name: "ip", Resource: "db-config", Path: "{.status.loadBalancer.ingress[0].ip}"}},
			wantErr:          `reference "ip": path "{.status.loadBalancer.ingress[0].ip}" in resource "db-config": loadBalancer is not found`,
			wantStatusNotSet: true,
		},
		{
			name: "empty list in the status: not set yet",
			refs: []v1alpha1.Reference{{Name: "ip", Resource: "lb", Path: "status.loadBalancer.ingress[0].ip"}},
			sources: map[string]Source{"lb": {Object: map[string]interface{}{
				"status": map[string]interface{}{"loadBalancer": map[string]interface{}{"ingress": []interface{}{}}},
			}}},
			wantErr:          `reference "ip": path "status.loadBalancer.ingress[0].ip" in resource "lb": array index out of bounds: index 0, length 0`,
			wantStatusNotSet: true,
		},
		{
			name:             "no status at all: not set yet",
			refs:             []v1alpha1.Reference{{Name: "phase", Resource: "lb", Path: "['status'].phase"}},
			sources:          map[string]Source{"lb": {Object: map[string]interface{}{"spec": map[string]interface{}{}}}},
			wantErr:          `reference "phase": path "['status'].phase" in resource "lb": status is not found`,
			wantStatusNotSet: true,
		},
		{
			name:             "filter without a match in the status: not set yet",
			refs:             []v1alpha1.Reference{{Name: "ok", Resource: "db-config", Path: `status.conditions[?(@.type=="Available")].status`}},
			wantErr:          `reference "ok": path "status.conditions[?(@.type==\"Available\")].status" in resource "db-config": no value found`,
			wantStatusNotSet: true,
		},
		{
			name: "several values in the status",
			refs: []v1alpha1.Reference{{Name: "types", Resource: "db-config", Path: "status.conditions[*].status"}},
			sources: map[string]Source{"db-config": {Object: map[string]interface{}{"status": map[string]interface{}{"conditions": []interface{}{
				map[string]interface{}{"status": "True"}, map[string]interface{}{"status": "False"},
			}}}}},
			wantErr: `reference "types": path "status.conditions[*].status" in resource "db-config": 2 values found, exactly one is required`,
		},
		{
			name:    "a field named like the status is not the status",
			refs:    []v1alpha1.Reference{{Name: "x", Resource: "db-config", Path: "statusText"}},
			wantErr: `reference "x": path "statusText" in resource "db-config": statusText is not found`,
		},
		{
			name: "a Secret's missing status key: not set yet, nothing of the Secret in the error",
			refs: []v1alpha1.Reference{{Name: "x", Resource: "db-secret", Path: "status.x"}},
			// secret() has no status.
			wantErr:          `reference "x": path "status.x" in resource "db-secret": status is not found`,
			wantStatusNotSet: true,
		},
		{
			name:    "filter without a match",
			refs:    []v1alpha1.Reference{{Name: "port", Resource: "db-config", Path: `spec.ports[?(@.name=="grpc")].port`}},
			wantErr: `reference "port": path "spec.ports[?(@.name==\"grpc\")].port" in resource "db-config": no value found`,
		},
		{
			name:    "multiple results",
			refs:    []v1alpha1.Reference{{Name: "port", Resource: "db-config", Path: "spec.ports[*].port"}},
			wantErr: `reference "port": path "spec.ports[*].port" in resource "db-config": 2 values found, exactly one is required`,
		},
		{
			// The JSONPath of client-go reports the missing key of an element
			// instead of skipping the element.
			name: "filter over an element without the key",
			refs: []v1alpha1.Reference{{Name: "port", Resource: "svc", Path: `spec.ports[?(@.name=="http")].port`}},
			sources: map[string]Source{"svc": {Object: map[string]interface{}{
				"spec": map[string]interface{}{"ports": []interface{}{
					map[string]interface{}{"port": int64(8080)},
					map[string]interface{}{"name": "http", "port": int64(80)},
				}},
			}}},
			wantErr: `reference "port": path "spec.ports[?(@.name==\"http\")].port" in resource "svc": name is not found`,
		},
		{
			name:    "invalid JSONPath",
			refs:    []v1alpha1.Reference{{Name: "host", Resource: "db-config", Path: "data["}},
			wantErr: `reference "host": path "data[" in resource "db-config": invalid JSONPath: unterminated array`,
		},
		{
			name:    "recursive descent",
			refs:    []v1alpha1.Reference{{Name: "host", Resource: "db-config", Path: "..host"}},
			wantErr: `reference "host": path "..host" in resource "db-config": "..host" starts with a recursive descent (..), which finds the field anywhere in the object: write the path from the object's root, such as status.phase`,
		},
		{
			name:    "stray brace",
			refs:    []v1alpha1.Reference{{Name: "host", Resource: "db-config", Path: "data.host}"}},
			wantErr: `reference "host": path "data.host}" in resource "db-config": invalid JSONPath: braces are not allowed`,
		},
		{
			name:    "named reference without a path",
			refs:    []v1alpha1.Reference{{Name: "host", Resource: "db-config"}},
			wantErr: `reference "host" to resource "db-config": a named reference needs a path`,
		},
		{
			name: "duplicate name",
			refs: []v1alpha1.Reference{
				{Name: "host", Resource: "db-config", Path: "data.host"},
				{Name: "host", Resource: "db-config", Path: "spec.replicas"},
			},
			wantErr: `reference "host" is declared more than once`,
		},
		{
			name: "read from a Secret",
			refs: []v1alpha1.Reference{{Name: "password", Resource: "db-secret", Path: "data.password"}},
			want: Values{"password": {Data: "aHVudGVyMg==", FromSecret: true}},
		},
		{
			name:    "read from a live Secret not declared as one",
			refs:    []v1alpha1.Reference{{Name: "password", Resource: "s", Path: "data.password"}},
			sources: map[string]Source{"s": {Object: secret()}},
			want:    Values{"password": {Data: "aHVudGVyMg==", FromSecret: true}},
		},
		{
			name:        "example when the object is not available",
			refs:        []v1alpha1.Reference{{Name: "port", Resource: "db", Path: "spec.port", Example: example(`5432`)}},
			sources:     map[string]Source{"db": {}},
			useExamples: true,
			want:        Values{"port": {Data: int64(5432)}},
		},
		{
			name:        "example of a resource missing from sources",
			refs:        []v1alpha1.Reference{{Name: "labels", Resource: "db", Path: "spec.labels", Example: example(`{"app":"db","weight":1.5}`)}},
			useExamples: true,
			want:        Values{"labels": {Data: map[string]interface{}{"app": "db", "weight": 1.5}}},
		},
		{
			name:        "example standing in for a Secret value",
			refs:        []v1alpha1.Reference{{Name: "password", Resource: "s", Path: "data.password", Example: example(`"c2VjcmV0"`)}},
			sources:     map[string]Source{"s": {Secret: true}},
			useExamples: true,
			want:        Values{"password": {Data: "c2VjcmV0", FromSecret: true}},
		},
		{
			name:        "live object preferred over example",
			refs:        []v1alpha1.Reference{{Name: "host", Resource: "db-config", Path: "data.host", Example: example(`"example"`)}},
			useExamples: true,
			want:        Values{"host": {Data: "db.internal"}},
		},
		{
			name:        "invalid example",
			refs:        []v1alpha1.Reference{{Name: "host", Resource: "db", Path: "data.host", Example: example(`{`)}},
			useExamples: true,
			wantErr:     `reference "host": path "data.host" in resource "db": invalid example: unexpected end of JSON input`,
		},
		{
			name:        "path checked before the object is available",
			refs:        []v1alpha1.Reference{{Name: "host", Resource: "db", Path: "data[", Example: example(`"h"`)}},
			useExamples: true,
			wantErr:     `reference "host": path "data[" in resource "db": invalid JSONPath: unterminated array`,
		},
		{
			name:             "not available without example",
			refs:             []v1alpha1.Reference{{Name: "host", Resource: "db", Path: "data.host"}},
			sources:          map[string]Source{"db": {}},
			useExamples:      true,
			wantErr:          `reference "host": path "data.host" in resource "db": value not available yet`,
			wantNotAvailable: true,
		},
		{
			name:             "example not used unless asked",
			refs:             []v1alpha1.Reference{{Name: "host", Resource: "db", Path: "data.host", Example: example(`"h"`)}},
			wantErr:          `reference "host": path "data.host" in resource "db": value not available yet`,
			wantNotAvailable: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sources := tt.sources
			if sources == nil {
				sources = live
			}
			got, err := Resolve(tt.refs, sources, tt.useExamples)
			checkError(t, err, tt.wantErr)
			if tt.wantErr != "" {
				if got := errors.Is(err, ErrNotAvailable); got != tt.wantNotAvailable {
					t.Errorf("errors.Is(err, ErrNotAvailable) = %v, want %v", got, tt.wantNotAvailable)
				}
				if got := errors.Is(err, ErrStatusNotSet); got != tt.wantStatusNotSet {
					t.Errorf("errors.Is(err, ErrStatusNotSet) = %v, want %v", got, tt.wantStatusNotSet)
				}
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Resolve() = %#v, want %#v", got, tt.want)
			}
		})
	}
}

// TestResolveError checks that callers can tell which reference failed, and why.
func TestResolveError(t *testing.T) {
	_, err := Resolve(
		[]v1alpha1.Reference{{Name: "host", Resource: "db", Path: "data.host"}},
		map[string]Source{},
		true,
	)
	var referenceErr *Error
	if !errors.As(err, &referenceErr) {
		t.Fatalf("error %#v is not an *Error", err)
	}
	want := &Error{Reference: "host", Resource: "db", Path: "data.host", Err: ErrNotAvailable}
	if !reflect.DeepEqual(referenceErr, want) {
		t.Errorf("error = %#v, want %#v", referenceErr, want)
	}
}

// TestResolveDoesNotShareSource guards live objects, which may come from a
// shared informer cache, against changes to the values.
func TestResolveDoesNotShareSource(t *testing.T) {
	object := config()
	values, err := Resolve(
		[]v1alpha1.Reference{{Name: "labels", Resource: "db-config", Path: "spec.labels"}},
		map[string]Source{"db-config": {Object: object}},
		false,
	)
	if err != nil {
		t.Fatalf("Resolve() error = %v", err)
	}
	values["labels"].Data.(map[string]interface{})["app"] = "changed"
	if !reflect.DeepEqual(object, config()) {
		t.Errorf("changing a value changed the source: %v", object)
	}
}

func TestSubstitute(t *testing.T) {
	values := Values{
		"host":     {Data: "db.internal"},
		"replicas": {Data: int64(3)},
		"ratio":    {Data: 0.5},
		"enabled":  {Data: true},
		"nothing":  {Data: nil},
		"labels":   {Data: map[string]interface{}{"b": int64(2), "a": "<&>"}},
		"zones":    {Data: []interface{}{"a", int64(1)}},
		"password": {Data: "aHVudGVyMg==", FromSecret: true},
	}
	configMap := func(data map[string]interface{}) map[string]interface{} {
		return map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "data": data}
	}
	secretWith := func(data map[string]interface{}) map[string]interface{} {
		return map[string]interface{}{"apiVersion": "v1", "kind": "Secret", "data": data}
	}
	tests := []struct {
		name    string
		obj     map[string]interface{}
		want    map[string]interface{}
		wantErr string
	}{
		{
			name: "whole string keeps the type",
			obj: configMap(map[string]interface{}{
				"host":     "!{host}",
				"replicas": "!{replicas}",
				"ratio":    "!{ratio}",
				"enabled":  "!{enabled}",
				"nothing":  "!{nothing}",
				"labels":   "!{labels}",
				"zones":    "!{zones}",
			}),
			want: configMap(map[string]interface{}{
				"host":     "db.internal",
				"replicas": int64(3),
				"ratio":    0.5,
				"enabled":  true,
				"nothing":  nil,
				"labels":   map[string]interface{}{"b": int64(2), "a": "<&>"},
				"zones":    []interface{}{"a", int64(1)},
			}),
		},
		{
			name: "interpolation in a longer string",
			obj: configMap(map[string]interface{}{
				"host":     "postgres://!{host}/db",
				"replicas": "replicas=!{replicas}",
				"ratio":    "ratio=!{ratio}",
				"enabled":  "enabled=!{enabled}",
				"nothing":  "nothing=!{nothing}",
				"labels":   "labels=!{labels}",
				"zones":    "zones=!{zones}",
				"several":  "!{host}:!{replicas}/!{host}",
				"padded":   " !{host}",
			}),
			want: configMap(map[string]interface{}{
				"host":     "postgres://db.internal/db",
				"replicas": "replicas=3",
				"ratio":    "ratio=0.5",
				"enabled":  "enabled=true",
				"nothing":  "nothing=null",
				"labels":   `labels={"a":"<&>","b":2}`,
				"zones":    `zones=["a",1]`,
				"several":  "db.internal:3/db.internal",
				"padded":   " db.internal",
			}),
		},
		{
			name: "nested maps and slices",
			obj: map[string]interface{}{
				"spec": map[string]interface{}{
					"replicas": "!{replicas}",
					"template": map[string]interface{}{
						"containers": []interface{}{
							map[string]interface{}{
								"args": []interface{}{"--host", "!{host}", []interface{}{"!{enabled}"}},
								"env": []interface{}{
									map[string]interface{}{"name": "ZONES", "value": "!{zones}"},
								},
							},
						},
					},
				},
			},
			want: map[string]interface{}{
				"spec": map[string]interface{}{
					"replicas": int64(3),
					"template": map[string]interface{}{
						"containers": []interface{}{
							map[string]interface{}{
								"args": []interface{}{"--host", "db.internal", []interface{}{true}},
								"env": []interface{}{
									map[string]interface{}{"name": "ZONES", "value": []interface{}{"a", int64(1)}},
								},
							},
						},
					},
				},
			},
		},
		{
			name: "keys and other values are left alone",
			obj: configMap(map[string]interface{}{
				"!{host}":  "plain",
				"number":   int64(7),
				"empty":    "!{}",
				"open":     "!{host",
				"no-bang":  "{host}",
				"nested":   "!{a{b}}",
				"emptyMap": map[string]interface{}{},
				"list":     []interface{}{},
			}),
			want: configMap(map[string]interface{}{
				"!{host}":  "plain",
				"number":   int64(7),
				"empty":    "!{}",
				"open":     "!{host",
				"no-bang":  "{host}",
				"nested":   "!{a{b}}",
				"emptyMap": map[string]interface{}{},
				"list":     []interface{}{},
			}),
		},
		{
			name: "two ! before a marker's { are one ! of text",
			obj: configMap(map[string]interface{}{
				"whole":      "!!{host}",
				"pug":        "p !!{html} by !{host}",
				"undeclared": "!!{tag}",
				"odd":        "!!!{host}",
				"four":       "!!!!{host}",
				"five":       "hey!!!!!{host}!",
				"bang":       "!!{host}!{host}",
			}),
			want: configMap(map[string]interface{}{
				"whole":      "!{host}",
				"pug":        "p !{html} by db.internal",
				"undeclared": "!{tag}",
				"odd":        "!db.internal",
				"four":       "!!{host}",
				"five":       "hey!!db.internal!",
				"bang":       "!{host}db.internal",
			}),
		},
		{
			name: "nil object",
		},
		{
			name: "undeclared marker",
			obj: map[string]interface{}{
				"spec": map[string]interface{}{
					"containers": []interface{}{
						map[string]interface{}{"image": "registry/app:!{tag}"},
					},
				},
			},
			wantErr: `spec.containers[0].image: !{tag} refers to undeclared reference "tag"`,
		},
		{
			name:    "undeclared whole marker",
			obj:     configMap(map[string]interface{}{"tag": "!{tag}"}),
			wantErr: `data.tag: !{tag} refers to undeclared reference "tag"`,
		},
		{
			name:    "first offending field in key order",
			obj:     configMap(map[string]interface{}{"b": "!{y}", "a": "!{x}"}),
			wantErr: `data.a: !{x} refers to undeclared reference "x"`,
		},
		{
			name: "Secret into a Secret",
			obj:  secretWith(map[string]interface{}{"password": "!{password}", "host": "!{host}"}),
			want: secretWith(map[string]interface{}{"password": "aHVudGVyMg==", "host": "db.internal"}),
		},
		{
			name:    "Secret into a ConfigMap",
			obj:     configMap(map[string]interface{}{"password": "!{password}"}),
			wantErr: `data.password: reference "password" is read from a Secret and may only be injected into a Secret`,
		},
		{
			name:    "Secret interpolated into a ConfigMap",
			obj:     configMap(map[string]interface{}{"url": "postgres://app:!{password}@db"}),
			wantErr: `data.url: reference "password" is read from a Secret and may only be injected into a Secret`,
		},
		{
			name: "Secret into an object of another group",
			obj: map[string]interface{}{
				"apiVersion": "example.com/v1", "kind": "Secret",
				"spec": map[string]interface{}{"password": "!{password}"},
			},
			wantErr: `spec.password: reference "password" is read from a Secret and may only be injected into a Secret`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Substitute(tt.obj, values)
			checkError(t, err, tt.wantErr)
			if tt.wantErr == "" && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Substitute() = %#v, want %#v", got, tt.want)
			}
		})
	}
}

// TestSubstituteIsDeterministic guards against reporting whichever offending
// field map iteration meets first.
func TestSubstituteIsDeterministic(t *testing.T) {
	obj := map[string]interface{}{}
	for _, key := range []string{"e", "d", "c", "b", "a", "f", "g", "h"} {
		obj[key] = "!{" + key + "}"
	}
	for i := 0; i < 100; i++ {
		_, err := Substitute(obj, Values{})
		checkError(t, err, `a: !{a} refers to undeclared reference "a"`)
	}
}

// TestSubstituteDoesNotShareMemory checks that the input object and the values
// are left untouched and that the result shares nothing with them.
func TestSubstituteDoesNotShareMemory(t *testing.T) {
	newObj := func() map[string]interface{} {
		return map[string]interface{}{
			"data": map[string]interface{}{
				"labels": "!{labels}",
				"copy":   "!{labels}",
				"list":   []interface{}{"!{host}", map[string]interface{}{"k": "v"}},
			},
		}
	}
	newValues := func() Values {
		return Values{
			"host":   {Data: "db.internal"},
			"labels": {Data: map[string]interface{}{"app": "db"}},
		}
	}
	obj, values := newObj(), newValues()

	got, err := Substitute(obj, values)
	if err != nil {
		t.Fatalf("Substitute() error = %v", err)
	}
	if !reflect.DeepEqual(obj, newObj()) {
		t.Errorf("Substitute() changed its input: %v", obj)
	}

	data := got["data"].(map[string]interface{})
	data["labels"].(map[string]interface{})["app"] = "changed"
	data["list"].([]interface{})[1].(map[string]interface{})["k"] = "changed"
	if !reflect.DeepEqual(obj, newObj()) {
		t.Errorf("changing the result changed the input: %v", obj)
	}
	if !reflect.DeepEqual(values, newValues()) {
		t.Errorf("changing the result changed the values: %v", values)
	}
	if app := data["copy"].(map[string]interface{})["app"]; app != "db" {
		t.Errorf("two uses of a value share memory: copy.app = %v", app)
	}
}

func TestMarkers(t *testing.T) {
	tests := []struct {
		name string
		obj  map[string]interface{}
		want []string
	}{
		{
			name: "none",
			obj:  map[string]interface{}{"data": map[string]interface{}{"a": "plain", "b": int64(1)}},
			want: []string{},
		},
		{
			name: "nil",
			want: []string{},
		},
		{
			name: "sorted and distinct, nested, keys ignored",
			obj: map[string]interface{}{
				"!{key}": "!{zeta}",
				"spec": map[string]interface{}{
					"a": "!{alpha}:!{zeta}",
					"b": []interface{}{"x", []interface{}{"!{beta}"}, map[string]interface{}{"c": "-!{alpha}-"}},
					"d": "!{} !{open {x}",
				},
			},
			want: []string{"alpha", "beta", "zeta"},
		},
		{
			name: "escaped markers are text",
			obj:  map[string]interface{}{"data": map[string]interface{}{"a": "!!{text} !{used} !!!{more} !!!!{text2}"}},
			want: []string{"more", "used"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Markers(tt.obj); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Markers() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestIsSecret(t *testing.T) {
	tests := []struct {
		name string
		obj  map[string]interface{}
		want bool
	}{
		{name: "Secret", obj: map[string]interface{}{"apiVersion": "v1", "kind": "Secret"}, want: true},
		{name: "ConfigMap", obj: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap"}},
		{name: "Secret of another group", obj: map[string]interface{}{"apiVersion": "example.com/v1", "kind": "Secret"}},
		{name: "no type", obj: map[string]interface{}{}},
		{name: "nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsSecret(tt.obj); got != tt.want {
				t.Errorf("IsSecret() = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestResolveAndSubstitute copies a Secret's data, still base64, into another
// Secret, as a controller would.
func TestResolveAndSubstitute(t *testing.T) {
	refs := []v1alpha1.Reference{
		{Name: "password", Resource: "db-secret", Path: "data.password"},
		{Name: "host", Resource: "db-config", Path: "data.host"},
		{Resource: "db-config"},
	}
	values, err := Resolve(refs, map[string]Source{
		"db-secret": {Object: secret(), Secret: true},
		"db-config": {Object: config()},
	}, false)
	if err != nil {
		t.Fatalf("Resolve() error = %v", err)
	}
	obj := map[string]interface{}{
		"apiVersion": "v1",
		"kind":       "Secret",
		"metadata":   map[string]interface{}{"name": "app"},
		"data":       map[string]interface{}{"DB_PASSWORD": "!{password}"},
		"stringData": map[string]interface{}{"DB_HOST": "!{host}"},
	}
	got, err := Substitute(obj, values)
	if err != nil {
		t.Fatalf("Substitute() error = %v", err)
	}
	want := map[string]interface{}{
		"apiVersion": "v1",
		"kind":       "Secret",
		"metadata":   map[string]interface{}{"name": "app"},
		"data":       map[string]interface{}{"DB_PASSWORD": "aHVudGVyMg=="},
		"stringData": map[string]interface{}{"DB_HOST": "db.internal"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Substitute() = %#v, want %#v", got, want)
	}
}

// TestSubstituteBound: the values substituted into one object are bounded, so
// that a value used by many markers cannot make an object the controller
// cannot hold (a ConfigMap's 1 MiB value, a thousand markers: 1 GiB, marshalled
// before the API server could refuse it). Whole values count by their JSON
// size, interpolated ones by their text's length; the template's own text does
// not count.
func TestSubstituteBound(t *testing.T) {
	const mib = 1 << 20
	// quarter is a string whose JSON, with its quotes, is a quarter of the bound.
	quarter := strings.Repeat("x", MaxSubstitutedBytes/4-2)
	values := Values{
		"mib":     {Data: strings.Repeat("x", mib)},
		"quarter": {Data: quarter},
		"list":    {Data: []interface{}{quarter}}, // JSON: ["…"], two bytes more
		"host":    {Data: "db.internal"},
		"secret":  {Data: quarter, FromSecret: true},
	}
	markers := func(n int, marker string) map[string]interface{} {
		data := map[string]interface{}{}
		for i := 0; i < n; i++ {
			data[fmt.Sprintf("k%04d", i)] = marker
		}
		return map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "data": data}
	}
	tests := []struct {
		name    string
		obj     map[string]interface{}
		wantErr string
	}{
		{
			name:    "a thousand whole markers of a 1 MiB value",
			obj:     markers(1000, "!{mib}"),
			wantErr: `data.k0002: !{mib} (1048578 bytes, after 2097156 bytes of values substituted before it): the values substituted into one object are limited to 3 MiB (3145728 bytes)`,
		},
		{
			name:    "a thousand interpolated markers of a 1 MiB value",
			obj:     markers(1000, "v=!{mib}"),
			wantErr: `data.k0003: !{mib} (1048576 bytes, after 3145728 bytes of values substituted before it): the values substituted into one object are limited to 3 MiB (3145728 bytes)`,
		},
		{
			name:    "many markers in one string",
			obj:     markers(1, strings.Repeat("!{mib}", 1000)),
			wantErr: `data.k0000: !{mib} (1048576 bytes, after 3145728 bytes of values substituted before it): the values substituted into one object are limited to 3 MiB (3145728 bytes)`,
		},
		{
			name: "whole values up to the bound",
			obj:  markers(4, "!{quarter}"),
		},
		{
			name: "a short value past the bound",
			obj: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]interface{}{
				"a": "!{quarter}", "b": "!{quarter}", "c": "!{quarter}", "d": "!{quarter}", "e": "!{host}",
			}},
			wantErr: `data.e: !{host} (13 bytes, after 3145728 bytes of values substituted before it): the values substituted into one object are limited to 3 MiB (3145728 bytes)`,
		},
		{
			// The sizes would tell a Secret value's length.
			name: "a Secret's values past the bound, without sizes",
			obj: map[string]interface{}{"apiVersion": "v1", "kind": "Secret", "data": map[string]interface{}{
				"a": "!{secret}", "b": "!{quarter}", "c": "!{quarter}", "d": "!{quarter}", "e": "!{host}",
			}},
			wantErr: `data.e: !{host}: the values substituted into one object are limited to 3 MiB (3145728 bytes)`,
		},
		{
			name:    "a whole list counts by its JSON",
			obj:     markers(4, "!{list}"),
			wantErr: `data.k0003: !{list} (786434 bytes, after 2359302 bytes of values substituted before it): the values substituted into one object are limited to 3 MiB (3145728 bytes)`,
		},
		{
			name: "interpolated strings count by their length",
			obj:  markers(1, "!{mib}-!{mib}-!{mib}"),
		},
		{
			name: "the template's own text does not count",
			obj:  markers(1, strings.Repeat("text !!{mib} ", 400000)+"!{host}"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Substitute(tt.obj, values)
			checkError(t, err, tt.wantErr)
			if tt.wantErr != "" {
				if !errors.Is(err, ErrTooLarge) {
					t.Errorf("errors.Is(err, ErrTooLarge) = false for %v", err)
				}
				if got != nil {
					t.Errorf("Substitute() returned an object with its error")
				}
			}
		})
	}
}

// TestSubstituteExamplesBound: examples are bounded as values are, so that
// validating a Bundle cannot be made to build a huge plugin spec either.
func TestSubstituteExamplesBound(t *testing.T) {
	refs := []v1alpha1.Reference{{Name: "v", Resource: "src", Path: "data.v", Example: example(`"` + strings.Repeat("x", 1<<20) + `"`)}}
	obj := map[string]interface{}{"spec": map[string]interface{}{"a": "!{v}", "b": "!{v}", "c": "!{v}", "d": "!{v}"}}
	_, _, err := SubstituteExamples(obj, refs)
	checkError(t, err, `spec.c: !{v} (1048578 bytes, after 2097156 bytes of values substituted before it): the values substituted into one object are limited to 3 MiB (3145728 bytes)`)
}

// TestSubstituteBoundsWhileSubstituting: the bound is counted as values are
// put in, not on the object once built, which would be too late.
func TestSubstituteBoundsWhileSubstituting(t *testing.T) {
	data := map[string]interface{}{}
	for i := 0; i < 1000; i++ {
		data[fmt.Sprintf("k%04d", i)] = "v=!{v}"
	}
	obj := map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "data": data}
	values := Values{"v": {Data: strings.Repeat("x", 1<<20)}}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Substitute(obj, values)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Substitute() error = %v, want ErrTooLarge", err)
	}
	// The bound, and the strings.Builder's growth to it, and some.
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 8*MaxSubstitutedBytes {
		t.Errorf("Substitute() allocated %d MiB before refusing, want less than %d MiB", allocated>>20, 8*MaxSubstitutedBytes>>20)
	}
}

// TestResolveWithholdsSecretValues: the error of a reference to a Secret says
// what failed without a value of the Secret, as client-go's JSONPath would print
// some (a filter over data prints data, every key with its value): the error
// becomes the resource's message, the Ready condition's and a Warning event,
// which more people read than the Secret. It still names the reference, the
// path and the resource.
func TestResolveWithholdsSecretValues(t *testing.T) {
	const password, token = "aHVudGVyMg==", "c2VjcmV0LXRva2Vu"
	object := func() map[string]interface{} {
		return map[string]interface{}{
			"apiVersion": "v1",
			"kind":       "Secret",
			"metadata":   map[string]interface{}{"name": "db-secret", "finalizers": []interface{}{"example.com/keep"}},
			"data":       map[string]interface{}{"password": password, "token": token},
		}
	}
	const withheld = " (a Secret's values are left out of errors)"
	tests := []struct {
		name    string
		path    string
		source  Source
		wantErr string
	}{
		{
			name:    "filter over data",
			path:    `data[?(@.k=="x")]`,
			wantErr: `reference "pw": path "data[?(@.k==\"x\")]" in resource "db-secret": a filter ([?(…)]) meets a value that is not a list` + withheld,
		},
		{
			name:    "filter over a live Secret not declared as one",
			path:    `data[?(@.k=="x")]`,
			source:  Source{Object: object()},
			wantErr: `reference "pw": path "data[?(@.k==\"x\")]" in resource "db-secret": a filter ([?(…)]) meets a value that is not a list` + withheld,
		},
		{
			name:    "filter over a value",
			path:    `data.password[?(@=="x")]`,
			wantErr: `reference "pw": path "data.password[?(@==\"x\")]" in resource "db-secret": a filter ([?(…)]) meets a value that is not a list` + withheld,
		},
		{
			name:    "existence filter over a value",
			path:    `data['token'][?(@.x)]`,
			wantErr: `reference "pw": path "data['token'][?(@.x)]" in resource "db-secret": a filter ([?(…)]) meets a value that is not a list` + withheld,
		},
		{
			name:    "index on a map",
			path:    "data[0]",
			wantErr: `reference "pw": path "data[0]" in resource "db-secret": an index ([…]) meets a value that is not a list` + withheld,
		},
		{
			name:    "range over a string",
			path:    "data.password[*]",
			wantErr: `reference "pw": path "data.password[*]" in resource "db-secret": an index ([…]) meets a value that is not a list` + withheld,
		},
		{
			name:    "slice of a string",
			path:    "data.password[0:4]",
			wantErr: `reference "pw": path "data.password[0:4]" in resource "db-secret": an index ([…]) meets a value that is not a list` + withheld,
		},
		{
			name:    "missing key",
			path:    "data.missing",
			wantErr: `reference "pw": path "data.missing" in resource "db-secret": missing is not found`,
		},
		{
			name:    "key under a value",
			path:    "data.password.x",
			wantErr: `reference "pw": path "data.password.x" in resource "db-secret": x is not found`,
		},
		{
			name:    "index out of range",
			path:    "metadata.finalizers[3]",
			wantErr: `reference "pw": path "metadata.finalizers[3]" in resource "db-secret": array index out of bounds: index 3, length 1`,
		},
		{
			name:    "comparison of a string with a number",
			path:    "metadata.finalizers[?(@>1)]",
			wantErr: `reference "pw": path "metadata.finalizers[?(@>1)]" in resource "db-secret": incompatible types for comparison`,
		},
		{
			// The count would be the length of a value: data.token.* finds its
			// bytes.
			name:    "several values",
			path:    "data.token.*",
			wantErr: `reference "pw": path "data.token.*" in resource "db-secret": several values found, exactly one is required`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			source := tt.source
			if source.Object == nil {
				source = Source{Object: object(), Secret: true}
			}
			refs := []v1alpha1.Reference{{Name: "pw", Resource: "db-secret", Path: tt.path}}
			_, err := Resolve(refs, map[string]Source{"db-secret": source}, false)
			checkError(t, err, tt.wantErr)
			for _, value := range []string{password, token, "hunter2"} {
				if strings.Contains(err.Error(), value) {
					t.Errorf("the error holds the Secret's value %q: %v", value, err)
				}
			}
		})
	}
}

// TestResolveBoundsCause: an error of client-go's JSONPath that prints the value
// it could not use is cut, as a ConfigMap's value may be 1 MiB and the error
// becomes an event; it keeps its start, and still names the reference.
func TestResolveBoundsCause(t *testing.T) {
	for _, size := range []int{2 * maxCauseText, 1 << 20} {
		big := strings.Repeat("x", size)
		object := map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]interface{}{"big": big}}
		refs := []v1alpha1.Reference{{Name: "v", Resource: "cfg", Path: `data[?(@.k=="x")]`}}
		_, err := Resolve(refs, map[string]Source{"cfg": {Object: object}}, false)
		const start = `reference "v": path "data[?(@.k==\"x\")]" in resource "cfg": map[big:xxx`
		if err == nil || !strings.HasPrefix(err.Error(), start) || !strings.HasSuffix(err.Error(), "…") {
			t.Fatalf("value of %d bytes: error = %.200q…, want it to start %q and be cut (…)", size, err, start)
		}
		if n := len(err.Error()); n > len(start)+maxCauseText {
			t.Errorf("value of %d bytes: error of %d bytes, want at most %d", size, n, len(start)+maxCauseText)
		}
	}
}

// A path with a wildcard or a recursive descent that fails on an object fails
// the same way at each pass: client-go walks * and .. over a map in random
// order and names the first value it cannot follow, so the same object gave
// another error (and another status write and Warning) pass after pass, and a
// status path flipped between Blocked (not set) and Error.
func TestResolveWildcardErrorIsStable(t *testing.T) {
	object := map[string]interface{}{"spec": map[string]interface{}{"a": int64(3), "b": map[string]interface{}{"app": "x"}, "c": false, "d": "x"}}
	for _, path := range []string{"spec.*[?(@.x==1)]", "status..x[?(@.y==1)]"} {
		if path[0] == 's' && path[1] == 't' {
			object["status"] = object["spec"]
		}
		seen := map[string]bool{}
		for range 200 {
			_, err := Resolve([]v1alpha1.Reference{{Name: "v", Resource: "r", Path: path}}, map[string]Source{"r": {Object: object}}, false)
			if err == nil {
				t.Fatalf("%s: no error", path)
			}
			seen[err.Error()] = true
		}
		if len(seen) != 1 {
			t.Errorf("%s: %d different errors: %v", path, len(seen), seen)
		}
	}
}
