package bench

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// floorLabel marks the ConfigMaps of the floor run with the name of the Bundle
// that would hold them: the same shape of metadata as limbo's label, under a key
// the controller does not watch.
const floorLabel = "bench.limbo.dev/bundle"

// pokeLabel is the label the no-op phase adds to one managed object per Bundle.
const pokeLabel = "bench.limbo.dev/poke"

// payload makes every ConfigMap carry a few hundred bytes, like a small
// application configuration.
var payload = strings.Repeat("0123456789abcdef", 12)

// item is one object of the workload: ConfigMap j of Bundle i.
type item struct{ bundle, object int }

// workload describes the Bundles and objects of a run and which objects the
// deletion phase removes (they carry limbo.dev/deletionDelay from the start, so
// that removing them is the only change).
type workload struct {
	objects int
	delays  map[item]time.Duration
	// removed lists, by Bundle, the objects the deletion phase removes.
	removed map[int][]int
}

func newWorkload(bundles, objects, deletions int, minDelay, maxDelay time.Duration) *workload {
	w := &workload{objects: objects, delays: map[item]time.Duration{}, removed: map[int][]int{}}
	deletions = min(deletions, bundles*objects)
	delays := make([]time.Duration, deletions)
	for k := range delays {
		d := minDelay
		if deletions > 1 {
			d += time.Duration(float64(maxDelay-minDelay) * float64(k) / float64(deletions-1))
		}
		delays[k] = d.Round(time.Millisecond)
	}
	// Delays are dealt to the objects in a fixed random order, so that deadlines
	// do not follow the Bundles' order.
	rnd := rand.New(rand.NewSource(1))
	rnd.Shuffle(len(delays), func(a, b int) { delays[a], delays[b] = delays[b], delays[a] })
	for k := range deletions {
		// The last objects of each Bundle first, one Bundle after the other.
		it := item{bundle: k % bundles, object: objects - 1 - k/bundles}
		w.delays[it] = delays[k]
		w.removed[it.bundle] = append(w.removed[it.bundle], it.object)
	}
	return w
}

func bundleName(i int) string       { return fmt.Sprintf("b-%04d", i) }
func resourceName(j int) string     { return fmt.Sprintf("cm-%02d", j) }
func configMapName(i, j int) string { return bundleName(i) + "-" + resourceName(j) }
func (w *workload) deletions() int  { return len(w.delays) }

// configMap is the template of ConfigMap j of Bundle i.
func (w *workload) configMap(i, j int) map[string]any {
	cm := configMapTemplate(bundleName(i), j)
	if d, ok := w.delays[item{i, j}]; ok {
		cm["metadata"].(map[string]any)["annotations"] = map[string]any{limbov1alpha1.AnnotationDeletionDelay: d.String()}
	}
	return cm
}

// configMapTemplate is ConfigMap j of the Bundle named bundle (a name, or an
// expression that gives one, as in kro's template).
func configMapTemplate(bundle string, j int) map[string]any {
	return map[string]any{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   map[string]any{"name": bundle + "-" + resourceName(j)},
		"data": map[string]any{
			"bundle":         bundle,
			"index":          fmt.Sprint(j),
			"app.properties": "mode=benchmark\npayload=" + payload + "\n",
		},
	}
}

// floorObject is ConfigMap j of Bundle i as the floor run applies it.
func (w *workload) floorObject(ns string, i, j int) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: w.configMap(i, j)}
	u.SetNamespace(ns)
	u.SetLabels(map[string]string{floorLabel: bundleName(i)})
	return u
}

// bundle is Bundle i with every object except those skip rejects.
func (w *workload) bundle(ns string, i int, skip func(j int) bool) (*limbov1alpha1.Bundle, error) {
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: bundleName(i), Namespace: ns}}
	for j := range w.objects {
		if skip != nil && skip(j) {
			continue
		}
		res, err := w.resource(i, j)
		if err != nil {
			return nil, err
		}
		b.Spec.Resources = append(b.Spec.Resources, res)
	}
	return b, nil
}

func (w *workload) resource(i, j int) (limbov1alpha1.Resource, error) {
	raw, err := json.Marshal(w.configMap(i, j))
	if err != nil {
		return limbov1alpha1.Resource{}, err
	}
	return limbov1alpha1.Resource{Name: resourceName(j), Object: &runtime.RawExtension{Raw: raw}}, nil
}
