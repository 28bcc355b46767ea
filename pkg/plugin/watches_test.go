package plugin_test

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/pkg/plugin"
)

func metadataOf(group, kind string) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: "v1", Kind: kind})
	return m
}

// Kinds the API server does not serve (a CRD not installed) are split off, so
// that the controller starts without them; kinds of one Go type are told apart.
func TestServedWatches(t *testing.T) {
	served := metadataOf("csi.example", "Drive")
	r := newRegistry(t, fakePlugin{plugin.Description{Name: "nodes", Watches: []client.Object{
		&corev1.Node{}, served, metadataOf("csi.example", "Volume"),
	}}})
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Node"}, meta.RESTScopeRoot)
	mapper.Add(served.GroupVersionKind(), meta.RESTScopeRoot)

	watches, missing := r.ServedWatches(clientgoscheme.Scheme, mapper)
	var got []client.Object
	for _, w := range watches {
		got = append(got, w.Object)
	}
	if want := []client.Object{&corev1.Node{}, served}; !reflect.DeepEqual(got, want) {
		t.Errorf("served = %v, want %v", got, want)
	}
	if len(missing) != 1 || missing[0].Object.GetObjectKind().GroupVersionKind() != (schema.GroupVersionKind{Group: "csi.example", Version: "v1", Kind: "Volume"}) ||
		!reflect.DeepEqual(missing[0].Plugins, []string{"nodes"}) {
		t.Errorf("missing = %v, want the Volume watch of plugin nodes", missing)
	}
}
