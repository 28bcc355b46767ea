package it

import (
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// Mistakes the schema can see are rejected at admission, with a message that says
// what is wrong, before the controller ever sees the Bundle.
func TestBundleAdmissionRejectsInvalid(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	configMap := func(name string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name}}
	}
	cases := []struct {
		name           string
		resources      []limbov1alpha1.Resource
		serviceAccount string
		bundleName     string // "" a short one
		want           string
	}{
		{
			name:      "both object and plugin",
			resources: []limbov1alpha1.Resource{{Name: "a", Object: rawObject(t, configMap("a")), Plugin: &limbov1alpha1.PluginResource{Name: "namespace-gc"}}},
			want:      "a resource must have exactly one of object and plugin",
		},
		{
			name:      "neither object nor plugin",
			resources: []limbov1alpha1.Resource{{Name: "a"}},
			want:      "a resource must have exactly one of object and plugin",
		},
		{
			name:      "resource name not a DNS-1123 label",
			resources: []limbov1alpha1.Resource{{Name: "Not_A_Label", Object: rawObject(t, configMap("a"))}},
			want:      `spec.resources[0].name: Invalid value: "Not_A_Label"`,
		},
		{
			name:      "duplicate resource names",
			resources: []limbov1alpha1.Resource{{Name: "a", Object: rawObject(t, configMap("a"))}, {Name: "a", Object: rawObject(t, configMap("b"))}},
			want:      `spec.resources[1]: Duplicate value: {"name":"a"}`,
		},
		{
			name:      "object without kind",
			resources: []limbov1alpha1.Resource{{Name: "a", Object: rawObject(t, map[string]any{"apiVersion": "v1", "metadata": map[string]any{"name": "a"}})}},
			want:      "spec.resources[0].object.kind: Required value",
		},
		{
			name:      "reference without resource",
			resources: []limbov1alpha1.Resource{{Name: "a", References: []limbov1alpha1.Reference{{Name: "x"}}, Object: rawObject(t, configMap("a"))}},
			want:      "spec.resources[0].references[0].resource: Invalid value",
		},
		{
			// It would be impersonated as system:serviceaccount:<ns>:x:y.
			name:           "serviceAccountName not a ServiceAccount name",
			resources:      []limbov1alpha1.Resource{{Name: "a", Object: rawObject(t, configMap("a"))}},
			serviceAccount: "x:y",
			want:           `spec.serviceAccountName: Invalid value: "x:y": spec.serviceAccountName in body should match`,
		},
		{
			// The value of the limbo.dev/bundle label on its objects: every
			// write of them would be refused, and nothing said why.
			name:       "a name longer than a label value",
			resources:  []limbov1alpha1.Resource{{Name: "a", Object: rawObject(t, configMap("a"))}},
			bundleName: strings.Repeat("b", 64),
			want:       "a Bundle's name has at most 63 characters",
		},
		{
			// client-go's JSONPath parser recurses once per token: a long
			// path once overflowed the controller's stack.
			name: "a reference path longer than 1024 characters",
			resources: []limbov1alpha1.Resource{{Name: "a", References: []limbov1alpha1.Reference{{Name: "x", Resource: "b", Path: "data" + strings.Repeat(" ", 1021) + "host"}},
				Object: rawObject(t, configMap("a"))}},
			want: "spec.resources[0].references[0].path: Too long",
		},
		{
			name:      "more than 2000 resources (the status could outgrow etcd's object size)",
			resources: manyConfigMapResources(t, 2001),
			want:      "spec.resources: Too many: 2001: must have at most 2000 items",
		},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testenv.Context(t, testenv.DefaultTimeout)
			name := tc.bundleName
			if name == "" {
				name = "invalid-" + string(rune('a'+i))
			}
			b := &limbov1alpha1.Bundle{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec:       limbov1alpha1.BundleSpec{Resources: tc.resources, ServiceAccountName: tc.serviceAccount},
			}
			err := env.Client.Create(ctx, b)
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want an Invalid error, got %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

// manyConfigMapResources is n resources, each a ConfigMap.
func manyConfigMapResources(t *testing.T, n int) []limbov1alpha1.Resource {
	t.Helper()
	out := make([]limbov1alpha1.Resource, n)
	for i := range out {
		name := fmt.Sprintf("cm-%d", i)
		out[i] = limbov1alpha1.Resource{Name: name, Object: rawObject(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name}})}
	}
	return out
}
