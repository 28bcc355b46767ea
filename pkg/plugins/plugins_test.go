package plugins_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/plugins"
)

type extra struct{ name string }

func (e extra) Describe() plugin.Description { return plugin.Description{Name: e.name} }
func (extra) Plan(context.Context, plugin.Request) (*plugin.Result, error) {
	return &plugin.Result{Ready: true}, nil
}

func TestNewRegistry(t *testing.T) {
	r, err := plugins.NewRegistry(plugins.Options{NamespaceGCInterval: time.Hour, NamespaceGCDelay: 20 * time.Second}, extra{"test-extra"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.Names(), []string{"configmap", "deorbit", "namespace-gc", "node-removal", "route-gc", "test-extra"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Names = %q, want %q", got, want)
	}
	var watched []string
	for _, w := range r.Watches() {
		name := reflect.TypeOf(w.Object).String()
		if kind := w.Object.GetObjectKind().GroupVersionKind().Kind; kind != "" {
			name = kind + "." + w.Object.GetObjectKind().GroupVersionKind().Group
		}
		watched = append(watched, name+"="+w.Plugins[0])
	}
	// Kinds are told apart by type and kind: node-removal's metadata-only watches
	// are five kinds of one Go type.
	want := []string{"*v1.Namespace=namespace-gc", "Node.=node-removal",
		"Node.csi-baremetal.dell.com=node-removal", "Drive.csi-baremetal.dell.com=node-removal",
		"AvailableCapacity.csi-baremetal.dell.com=node-removal", "LogicalVolumeGroup.csi-baremetal.dell.com=node-removal",
		"Volume.csi-baremetal.dell.com=node-removal"}
	if !reflect.DeepEqual(watched, want) {
		t.Errorf("Watches = %q, want %q", watched, want)
	}
}

// Every plugin whose parse can refuse what its schema lets through checks the
// spec with it, so that such a spec is a spec error, not a plan error.
func TestSpecCheckers(t *testing.T) {
	r, err := plugins.NewRegistry(plugins.Options{Metrics: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	var checked []string
	for _, name := range r.Names() {
		p, _ := r.Get(name)
		if _, ok := p.(plugin.SpecChecker); ok {
			checked = append(checked, name)
		}
	}
	if want := []string{"deorbit", "namespace-gc", "node-removal", "route-gc"}; !reflect.DeepEqual(checked, want) {
		t.Errorf("SpecCheckers = %q, want %q", checked, want)
	}
}

func TestNewRegistryRefusesAnExtraPluginNamedLikeACompiledInOne(t *testing.T) {
	if _, err := plugins.NewRegistry(plugins.Options{}, extra{"namespace-gc"}); err == nil || err.Error() != `plugin "namespace-gc" registered twice` {
		t.Errorf("err = %v", err)
	}
}

// A Bundle naming a plugin that is not compiled in is told the names that are,
// sorted, in the resource's spec error: namespace_gc is a typo of namespace-gc.
func TestUnknownPluginNamesTheKnownOnes(t *testing.T) {
	r, err := plugins.NewRegistry(plugins.Options{Metrics: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		want string
	}{
		{"namespace_gc", `unknown plugin "namespace_gc" (known: configmap, deorbit, namespace-gc, node-removal, route-gc)`},
		{"NamespaceGC", `unknown plugin "NamespaceGC" (known: configmap, deorbit, namespace-gc, node-removal, route-gc)`},
	} {
		b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "default"},
			Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{{Name: "gc", Plugin: &limbov1alpha1.PluginResource{Name: tc.name}}}}}
		_, errs := bundlespec.Parse(b, nil, r)
		if len(errs) != 1 || errs[0].Reason != limbov1alpha1.ReasonUnknownPlugin || errs[0].Message != tc.want {
			t.Errorf("plugin %q: errors %+v, want one %s: %s", tc.name, errs, limbov1alpha1.ReasonUnknownPlugin, tc.want)
		}
	}
}
