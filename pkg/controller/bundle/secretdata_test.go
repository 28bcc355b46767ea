package bundle

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestFoldStringData(t *testing.T) {
	secret := func(fields map[string]any) map[string]any {
		obj := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s"}}
		for k, v := range fields {
			obj[k] = v
		}
		return obj
	}
	cases := []struct {
		name    string
		in, out map[string]any
	}{
		{"stringData alone",
			secret(map[string]any{"stringData": map[string]any{"password": "s3cret"}}),
			secret(map[string]any{"data": map[string]any{"password": "czNjcmV0"}})},
		{"stringData wins over data for a key in both",
			secret(map[string]any{"data": map[string]any{"user": "YWRtaW4=", "token": "b2xk"}, "stringData": map[string]any{"token": "new"}}),
			secret(map[string]any{"data": map[string]any{"user": "YWRtaW4=", "token": "bmV3"}})},
		{"empty stringData goes",
			secret(map[string]any{"stringData": map[string]any{}}),
			secret(nil)},
		{"empty string value",
			secret(map[string]any{"stringData": map[string]any{"empty": ""}}),
			secret(map[string]any{"data": map[string]any{"empty": ""}})},
		{"data only: unchanged",
			secret(map[string]any{"data": map[string]any{"user": "YWRtaW4="}}),
			secret(map[string]any{"data": map[string]any{"user": "YWRtaW4="}})},
		{"a value that is not a string: left for the API server to refuse",
			secret(map[string]any{"stringData": map[string]any{"port": int64(5432), "host": "db"}}),
			secret(map[string]any{"stringData": map[string]any{"port": int64(5432), "host": "db"}})},
		{"stringData that is not a map: left for the API server to refuse",
			secret(map[string]any{"stringData": "password"}),
			secret(map[string]any{"stringData": "password"})},
		{"data that is not a map: left for the API server to refuse",
			secret(map[string]any{"data": "x", "stringData": map[string]any{"a": "b"}}),
			secret(map[string]any{"data": "x", "stringData": map[string]any{"a": "b"}})},
		{"not a Secret: a CRD's stringData is its own",
			map[string]any{"apiVersion": "example.com/v1", "kind": "Secret", "stringData": map[string]any{"a": "b"}},
			map[string]any{"apiVersion": "example.com/v1", "kind": "Secret", "stringData": map[string]any{"a": "b"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{Object: tc.in}
			foldStringData(obj)
			if !reflect.DeepEqual(obj.Object, tc.out) {
				t.Errorf("folded = %v, want %v", obj.Object, tc.out)
			}
		})
	}
}
