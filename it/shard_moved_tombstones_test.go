package it

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/controller"
)

// Tombstones a Bundle made before it moved to another shard keep the old
// shard's label, so the new shard's cache does not show them. Two Bundles move
// to shard a, each in one write that also ends its Tombstone's reason to be:
// "again" makes its item desired again, "removed" drops its plugin resource.
// The new shard finds each Tombstone through the previous status
// (pendingDeletions names it), moves it into its shard and cancels it: the
// items are never touched. Its passes used to list Tombstones from the cache
// alone: neither was cancelled, both stayed out of pendingDeletions, and the
// old shard's Tombstone controller would have deleted the items at their
// deadlines.
//
// The shards run in this process (the test plugin is registered only here),
// each with the in-process controller's options and its own selector.
func TestTombstonesOfABundleMovedToAnotherShard(t *testing.T) {
	env.WithoutController(t)
	again := newExternalItems(t)
	ns := again.ns
	removedDomain := ns + "-removed"
	removed := &externalItems{ns: ns, domain: external.Domain(removedDomain)}
	removed.domain.Set("keep", true)
	removed.domain.Set("orphan", false)
	for _, selector := range []string{shardLabel + "=a", "!" + shardLabel} {
		inProcessShard(t, ns, selector)
	}
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil))
	bundles := map[string]*limbov1alpha1.Bundle{
		"again":   waitReady(t, createBundle(t, ns, "again", again.resource("1h"))),
		"removed": waitReady(t, createBundle(t, ns, "removed", keep, pluginResource("items", removedDomain, "1h"))),
	}
	tss := map[string]*limbov1alpha1.Tombstone{}
	for name, b := range bundles {
		tss[name] = waitBundleTombstone(t, b)
		waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
			if cur.Status.PendingDeletionCount != 1 {
				return fmt.Errorf("pendingDeletions = %+v, want the Tombstone", cur.Status.PendingDeletions)
			}
			return nil
		})
	}

	again.domain.Set("orphan", true)
	moveAnd := func(b *limbov1alpha1.Bundle, resources ...limbov1alpha1.Resource) {
		testenv.Eventually(t, testenv.DefaultTimeout, func() error {
			cur := getBundle(t, b)
			if cur.Labels == nil {
				cur.Labels = map[string]string{}
			}
			cur.Labels[shardLabel] = "a"
			cur.Spec.Resources = resources
			return env.Client.Update(context.Background(), cur)
		})
	}
	// A changed spec makes the test plugin plan again (see replan).
	desiredAgain := again.resource("1h")
	desiredAgain.Plugin.Spec = &apiextensionsv1.JSON{Raw: []byte(fmt.Sprintf(`{"domain":%q,"replan":"moved"}`, ns))}
	moveAnd(bundles["again"], desiredAgain)
	moveAnd(bundles["removed"], keep)

	for name, why := range map[string]string{"again": "the item is desired again", "removed": `resource "items" left the Bundle`} {
		waitGoneTombstone(t, tss[name])
		waitEvent(t, bundles[name], corev1.EventTypeNormal, limbov1alpha1.EventDeletionCancelled, `TestItem "orphan": deletion cancelled (`+why+`)`)
	}
	for _, b := range bundles {
		noPendingDeletions(t, b)
	}
	testenv.Consistently(t, 2*time.Second, func() error {
		if err := again.untouched("orphan", "keep")(); err != nil {
			return err
		}
		if err := removed.untouched("orphan", "keep")(); err != nil {
			return err
		}
		return noTombstones(t, ns)()
	})
}

// inProcessShard runs, until t ends, a controller in this process with the
// in-process controller's options (its plugins: the test plugin), restricted to
// namespace ns and to the Bundles selector selects, without leader election.
// Call env.WithoutController first.
func inProcessShard(t testing.TB, ns, selector string) {
	t.Helper()
	opts := env.ControllerOptions()
	opts.Namespaces, opts.WatchLabelSelector, opts.LeaderElect = []string{ns}, selector, false
	opts.MetricsAddr, opts.ProbeAddr, opts.PprofAddr = "0", "0", ""
	mgr, err := controller.NewManager(env.Config, opts)
	if err != nil {
		t.Fatalf("controller of shard %s: %v", selector, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller of shard %s: %v", selector, err)
		}
	})
}

// waitBundleTombstone waits until b has exactly one Tombstone and returns it.
func waitBundleTombstone(t testing.TB, b *limbov1alpha1.Bundle) *limbov1alpha1.Tombstone {
	t.Helper()
	var ts limbov1alpha1.Tombstone
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		var list limbov1alpha1.TombstoneList
		if err := env.Client.List(context.Background(), &list, client.InNamespace(b.Namespace), client.MatchingLabels{limbov1alpha1.LabelBundle: b.Name}); err != nil {
			return err
		}
		if len(list.Items) != 1 {
			return fmt.Errorf("Bundle %s has %d Tombstones, want 1", b.Name, len(list.Items))
		}
		ts = list.Items[0]
		return nil
	})
	return &ts
}

// waitGoneTombstone waits until ts is gone (another Tombstone of its name, the
// same item judged again, would not be ts).
func waitGoneTombstone(t testing.TB, ts *limbov1alpha1.Tombstone) {
	t.Helper()
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		switch cur, err := getTombstone(ts); {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		case cur.UID == ts.UID:
			return fmt.Errorf("Tombstone %s is still there (labels %v)", ts.Name, cur.Labels)
		}
		return nil
	})
}
