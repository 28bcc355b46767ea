package bundle

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
)

// A generated object names its resource and carries the resource's delay,
// unless the plugin chose the object's own; without a delay on the resource it
// carries none (an orphan is deleted at once, as before).
func TestOwnGeneratedDelay(t *testing.T) {
	for _, tc := range []struct {
		name        string
		delay       string            // the resource's plugin.deletionDelay
		annotations map[string]string // the plugin's
		want        string            // limbo.dev/deletionDelay; "-" for none
	}{
		{name: "the resource's delay", delay: "10m", want: "10m"},
		{name: "a zero delay is a delay", delay: "0s", want: "0s"},
		{name: "no delay", want: "-"},
		{name: "the plugin's own wins", delay: "10m", annotations: map[string]string{limbov1alpha1.AnnotationDeletionDelay: "24h"}, want: "24h"},
		{name: "the plugin's own without a resource delay", annotations: map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1h"}, want: "1h"},
		{name: "other annotations kept", delay: "5m", annotations: map[string]string{"team": "shop"}, want: "5m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &pass{r: &Reconciler{}, bundle: &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "shop", UID: "u1"}}}
			res := &bundlespec.Resource{Resource: limbov1alpha1.Resource{Name: "settings", Plugin: &limbov1alpha1.PluginResource{Name: "configmap", DeletionDelay: tc.delay}}}
			obj := &unstructured.Unstructured{}
			obj.SetAPIVersion("v1")
			obj.SetKind("ConfigMap")
			obj.SetName("app-settings")
			obj.SetAnnotations(tc.annotations)
			got, err := p.ownGenerated(declaredGenerated(obj, res), res)
			if err != nil {
				t.Fatal(err)
			}
			a := got.GetAnnotations()
			delay, ok := a[limbov1alpha1.AnnotationDeletionDelay]
			if !ok {
				delay = "-"
			}
			if delay != tc.want {
				t.Errorf("%s = %q, want %q", limbov1alpha1.AnnotationDeletionDelay, delay, tc.want)
			}
			if a[limbov1alpha1.AnnotationGeneratedBy] != "settings" {
				t.Errorf("%s = %q, want the resource settings", limbov1alpha1.AnnotationGeneratedBy, a[limbov1alpha1.AnnotationGeneratedBy])
			}
			if _, changed := obj.GetAnnotations()[limbov1alpha1.AnnotationDeletionDelay]; changed && tc.annotations[limbov1alpha1.AnnotationDeletionDelay] == "" {
				t.Error("the plugin's object was changed: the declared object is a copy")
			}
			for k, v := range tc.annotations {
				if a[k] != v {
					t.Errorf("the plugin's annotation %s = %q, want %q", k, a[k], v)
				}
			}
			if c := metav1.GetControllerOf(got); c == nil || c.UID != "u1" {
				t.Errorf("controller %v, want the Bundle", c)
			}
		})
	}
}

// A label or annotation value that is not a string (a whole-string reference
// that resolved to a number, a null) is an error naming its key: unstructured's
// getters return no map then, and limbo's own labels would silently have
// replaced every label of the template (an apply that removes app=web from the
// live object, where the API server refuses the number). A null map is absent,
// as in a template (bundlespec.MetadataTypeErrors).
func TestOwnRefusesNonStringMetadata(t *testing.T) {
	const hint = " (a reference that resolved to another type?)"
	for _, tc := range []struct {
		name     string
		metadata map[string]any
		want     string // the error; "" for none
	}{
		{name: "strings", metadata: map[string]any{"labels": map[string]any{"app": "web"}, "annotations": map[string]any{"a": "b"}}},
		{name: "null maps are absent", metadata: map[string]any{"labels": nil, "annotations": nil}},
		{name: "a number label", metadata: map[string]any{"labels": map[string]any{"app": "web", "replicas": int64(3)}},
			want: `metadata.labels["replicas"] must be a string, not a number` + hint},
		{name: "a null annotation and a map", metadata: map[string]any{"annotations": map[string]any{"x": nil, "a": map[string]any{}}},
			want: `metadata.annotations["a"] must be a string, not an object; metadata.annotations["x"] must be a string, not null` + hint},
		{name: "labels not a map", metadata: map[string]any{"labels": "app=web"}, want: "metadata.labels must be a map of strings, not a string" + hint},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPass(&Reconciler{}, &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team-a", UID: "u1"}})
			tc.metadata["name"] = "web"
			desired, err := p.own(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": tc.metadata}})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("own: %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Fatalf("own: %v, want %q", err, tc.want)
			case tc.want == "" && desired.GetLabels()[limbov1alpha1.LabelBundle] != "shop":
				t.Errorf("labels = %v", desired.GetLabels())
			}
		})
	}
}
