package bench

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestKroGraph(t *testing.T) {
	for _, objects := range []int{1, 3, 10} {
		g := kroGraph(objects)
		if g.GetAPIVersion() != "kro.run/v1alpha1" || g.GetKind() != "ResourceGraphDefinition" || g.GetName() != kroGraphName {
			t.Fatalf("graph is %s %s %s", g.GetAPIVersion(), g.GetKind(), g.GetName())
		}
		if kind, _, _ := unstructured.NestedString(g.Object, "spec", "schema", "kind"); kind != kroKind {
			t.Errorf("schema kind %q, want %q", kind, kroKind)
		}
		if v, _, _ := unstructured.NestedString(g.Object, "spec", "schema", "apiVersion"); v != "v1alpha1" {
			t.Errorf("schema apiVersion %q, want v1alpha1 (kro serves it in kro.run)", v)
		}
		resources, _, _ := unstructured.NestedSlice(g.Object, "spec", "resources")
		if len(resources) != objects {
			t.Fatalf("%d resources, want %d", len(resources), objects)
		}
		w := newWorkload(1, objects, 0, 0, 0)
		for j, res := range resources {
			res := res.(map[string]any)
			if want := "cm" + resourceName(j)[3:]; res["id"] != want {
				t.Errorf("resource %d id %v, want %s", j, res["id"], want)
			}
			// The template is Bundle 0's ConfigMap j with the instance's name
			// where the Bundle's name is.
			tmpl := res["template"].(map[string]any)
			name, _, _ := unstructured.NestedString(tmpl, "metadata", "name")
			if want := "${schema.metadata.name}-" + resourceName(j); name != want {
				t.Errorf("resource %d name %q, want %q", j, name, want)
			}
			bundleCM := w.configMap(0, j)
			if !reflect.DeepEqual(tmpl["data"].(map[string]any)["app.properties"], bundleCM["data"].(map[string]any)["app.properties"]) ||
				tmpl["data"].(map[string]any)["index"] != bundleCM["data"].(map[string]any)["index"] {
				t.Errorf("resource %d data %v differs from the Bundle's %v", j, tmpl["data"], bundleCM["data"])
			}
			if tmpl["kind"] != "ConfigMap" || tmpl["apiVersion"] != "v1" {
				t.Errorf("resource %d is %v %v", j, tmpl["apiVersion"], tmpl["kind"])
			}
		}
	}
}

func TestKroInstance(t *testing.T) {
	u := kroInstance(bundleName(7))
	if u.GetAPIVersion() != "kro.run/v1alpha1" || u.GetKind() != kroKind || u.GetNamespace() != kroNamespace || u.GetName() != "b-0007" {
		t.Errorf("instance %s %s %s/%s", u.GetAPIVersion(), u.GetKind(), u.GetNamespace(), u.GetName())
	}
}

func TestKroFlags(t *testing.T) {
	for _, c := range []struct {
		qps     float32
		burst   int
		workers int
		want    []string
	}{
		{1000, 2000, 4, []string{"--client-qps=1000", "--client-burst=2000", "--dynamic-controller-concurrent-reconciles=4", "--leader-elect=false", "--zap-log-level=info"}},
		{12.5, 25, 8, []string{"--client-qps=12.5", "--client-burst=25", "--dynamic-controller-concurrent-reconciles=8", "--leader-elect=false", "--zap-log-level=info"}},
	} {
		if got := kroFlags(c.qps, c.burst, c.workers, "info"); !reflect.DeepEqual(got, c.want) {
			t.Errorf("kroFlags(%g, %d, %d) = %v, want %v", c.qps, c.burst, c.workers, got, c.want)
		}
	}
}

func TestNewLane(t *testing.T) {
	for _, c := range []struct {
		name                string
		floor, bundles, wup string
	}{
		{laneThrottled, "bench-floor", "bench-bundles", "bench-warmup"},
		{laneUnthrottled, "bench-floor-unthrottled", "bench-bundles-unthrottled", "bench-warmup-unthrottled"},
	} {
		l := newLane(c.name, 1, 1)
		if l.floorNS != c.floor || l.bundlesNS != c.bundles || l.warmupNS != c.wup {
			t.Errorf("lane %s: namespaces %s %s %s", c.name, l.floorNS, l.bundlesNS, l.warmupNS)
		}
	}
	if newLane(laneThrottled, 1, 1).bundlesNS != nsBundles {
		t.Error("the throttled lane's Bundles are not where the later phases look")
	}
}
