package it

import (
	"context"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// An object handed over to a Bundle of another shard — by the giver's pass at
// the end of its countdown (shard a to the rest), and by its teardown (the
// rest to shard a) — is released into the adopter's shard: the release writes
// the adopter's shard label, so that the adopter's cache shows the object and
// its event wakes the adopter, which adopts it. Before, the released object
// kept the giver's shard label, which the adopter's cache does not select: the
// adopter adopted it only at its 30 s recheck of the objects in its way.
func TestHandOverToAnotherShard(t *testing.T) {
	env.WithoutController(t)
	ns := env.Namespace(t)
	startShards(t, ns)

	for _, tt := range []struct {
		name       string
		from, to   string // the shards of the giver and the adopter ("": the rest)
		byTeardown bool
		delay      string
	}{
		{name: "pass", from: "a", to: "", delay: "3s"},
		{name: "teardown", from: "", to: "a", delay: "1h", byTeardown: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			name := tt.name + "-db"
			db := configMap(name, map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: tt.delay})
			keep := objectResource(t, "keep", configMap(tt.name+"-keep", map[string]any{"a": "b"}, nil))
			giver := waitReady(t, createLabelledBundle(t, ns, tt.name+"-giver", shardLabels(tt.from), keep, objectResource(t, "db", db)))
			uid := getObject(t, configMapGVK, ns, name).GetUID()
			releases := watchReleases(t, ns, name)

			adopter := createLabelledBundle(t, ns, tt.name+"-adopter", shardLabels(tt.to),
				objectResource(t, "db", withAnnotations(db, map[string]any{limbov1alpha1.AnnotationAdopt: "true"})))
			waitBundle(t, adopter, func(cur *limbov1alpha1.Bundle) error {
				return resourceIs(cur, "db", limbov1alpha1.ResourceError, "ControlledByOther")
			})
			if tt.byTeardown {
				if err := env.Client.Delete(context.Background(), giver); err != nil {
					t.Fatalf("delete Bundle %s: %v", giver.Name, err)
				}
			} else {
				updateBundle(t, giver, keep)
			}

			waitHandedOver(t, giver, adopter, name, uid)
			seen := releases.shardLabels()
			if len(seen) == 0 {
				t.Fatalf("no released version of %s seen on the watch", name)
			}
			for _, got := range seen {
				if got != tt.to {
					t.Errorf("%s released with label %s = %q, want the adopter's %q (all released versions: %q)", name, shardLabel, got, tt.to, seen)
				}
			}
		})
	}
}

// shardLabels are the labels that put a Bundle in shard ("": the rest).
func shardLabels(shard string) map[string]string {
	if shard == "" {
		return nil
	}
	return map[string]string{shardLabel: shard}
}

// releaseWatch records the shard label of every released version of one
// ConfigMap (no controller, limbo.dev/released set) that a watch delivers: a
// version the adopter replaces a moment later is seen all the same.
type releaseWatch struct {
	mu     sync.Mutex
	labels []string
}

func watchReleases(t testing.TB, ns, name string) *releaseWatch {
	t.Helper()
	w := watchConfigMap(t, ns, name)
	r := &releaseWatch{}
	go func() {
		for ev := range w.ResultChan() {
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if !ok || ev.Type == watch.Deleted || metav1.GetControllerOf(cm) != nil || cm.Annotations[limbov1alpha1.AnnotationReleased] == "" {
				continue
			}
			r.mu.Lock()
			r.labels = append(r.labels, cm.Labels[shardLabel])
			r.mu.Unlock()
		}
	}()
	return r
}

// shardLabels are the shard labels of the released versions seen so far.
func (r *releaseWatch) shardLabels() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.labels...)
}
