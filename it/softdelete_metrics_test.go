package it

import (
	"fmt"
	"testing"
	"time"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// The engine's metrics follow a countdown: limbo_pending_deletions counts it while
// it runs; its delete is counted in limbo_deletions_total{result="deleted"} and
// its lateness observed in limbo_deletion_lateness_seconds.
// Not parallel: it expects exact increments of process-wide counters, which
// other tests' deletions would add to.
func TestSoftDeleteMetrics(t *testing.T) {
	ns := env.Namespace(t)
	// Long enough for the test to see db in limbo, listed in its Bundle's status,
	// under load: the stamp is rounded to the second, and a countdown that ends
	// before the waits below see it would fail them.
	const delay = 10 * time.Second
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil))
	b := createBundle(t, ns, "metrics", keep,
		objectResource(t, "db", configMap("db", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: delay.String()})))
	b = waitReady(t, b)
	waitEarlierTestsGone(t)
	before := gatherEngineMetrics(t)

	updateBundle(t, b, keep)
	waitInLimbo(t, configMapGVK, ns, "db")
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if cur.Status.PendingDeletionCount != 1 {
			return fmt.Errorf("pendingDeletionCount = %d, want 1", cur.Status.PendingDeletionCount)
		}
		return nil
	})
	if pending := gatherEngineMetrics(t).pending; pending < 1 {
		t.Errorf("limbo_pending_deletions = %v while db is in limbo (and listed in its Bundle's status), want ≥ 1", pending)
	}

	waitGone(t, configMapGVK, ns, "db")
	countedOnce := func() error {
		after := gatherEngineMetrics(t)
		if after.deleted != before.deleted+1 {
			return fmt.Errorf(`limbo_deletions_total{result="deleted"} went from %v to %v, want +1`, before.deleted, after.deleted)
		}
		if after.latenessCount != before.latenessCount+1 {
			return fmt.Errorf("limbo_deletion_lateness_seconds count went from %d to %d, want +1", before.latenessCount, after.latenessCount)
		}
		return nil
	}
	testenv.Eventually(t, testenv.DefaultTimeout, countedOnce) // counted once the delete has returned
	testenv.Consistently(t, 2*time.Second, countedOnce)
}

// engineMetrics are the soft-delete engine's metrics, read from the in-process
// controller's registry (the one its /metrics serves).
type engineMetrics struct {
	pending, deleted float64
	latenessCount    uint64
}

func gatherEngineMetrics(t testing.TB) engineMetrics {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	var m engineMetrics
	seen := map[string]bool{}
	for _, f := range families {
		seen[f.GetName()] = true
		for _, metric := range f.GetMetric() {
			switch f.GetName() {
			case "limbo_pending_deletions":
				m.pending = metric.GetGauge().GetValue()
			case "limbo_deletions_total":
				for _, l := range metric.GetLabel() {
					if l.GetName() == "result" && l.GetValue() == "deleted" {
						m.deleted = metric.GetCounter().GetValue()
					}
				}
			case "limbo_deletion_lateness_seconds":
				m.latenessCount = metric.GetHistogram().GetSampleCount()
			}
		}
	}
	for _, name := range []string{"limbo_pending_deletions", "limbo_deletion_lateness_seconds"} {
		if !seen[name] {
			t.Errorf("metric %s is not registered", name)
		}
	}
	return m
}
