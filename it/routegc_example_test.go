package it

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/openstack/openstacksim"
)

// examples/route-gc (secret.yaml, bundle.yaml) works against the simulator
// with the demo state of `limbo dev --simulators`, as under `make run`: the
// route to the deleted node is in limbo, the others are desired. Only the
// authURL changes, from the simulator's fixed port to this test's.
func TestRouteGCExample(t *testing.T) {
	dir := filepath.Join(env.RepoRoot, "examples", "route-gc")
	read := func(name string, into any) {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.UnmarshalStrict(data, into); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	var secret corev1.Secret
	var b limbov1alpha1.Bundle
	read("secret.yaml", &secret)
	read("bundle.yaml", &b)

	sim := openstacksim.New(openstacksim.Config{})
	sim.LoadDemo()
	base, stop, err := sim.Start("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop() })
	f := &routeGC{t: t, ns: env.Namespace(t), sim: sim, base: base, bundle: &b}

	if len(b.Spec.Resources) != 1 || b.Spec.Resources[0].Plugin == nil || b.Spec.Resources[0].Plugin.Spec == nil {
		t.Fatalf("bundle.yaml: want one plugin resource, got %+v", b.Spec.Resources)
	}
	res := &b.Spec.Resources[0]
	var spec map[string]any
	if err := json.Unmarshal(res.Plugin.Spec.Raw, &spec); err != nil {
		t.Fatal(err)
	}
	openstackSpec := spec["openstack"].(map[string]any)
	if want := openstacksim.AuthURL("http://127.0.0.1:5000"); openstackSpec["authURL"] != want {
		t.Errorf("bundle.yaml authURL = %v, want the simulator of limbo dev --simulators, %s", openstackSpec["authURL"], want)
	}
	if spec["routerID"] != openstacksim.DemoRouterID || spec["clusterCIDR"] != openstacksim.DemoClusterCIDR {
		t.Errorf("bundle.yaml routerID, clusterCIDR = %v, %v; want the demo's", spec["routerID"], spec["clusterCIDR"])
	}
	openstackSpec["authURL"] = openstacksim.AuthURL(base)
	raw, _ := json.Marshal(spec)
	res.Plugin.Spec.Raw = raw

	secret.Namespace, b.Namespace = f.ns, f.ns
	if err := env.Client.Create(context.Background(), &secret); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	f.waitReady("3 routes in 198.19.0.0/16, 1 orphaned; 2 servers")
	f.waitTombstone(openstacksim.DemoRoutes[2], res.Plugin.DeletionDelay)
}
