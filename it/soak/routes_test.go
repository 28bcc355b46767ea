package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/controller"
	"github.com/limbo-dev/limbo/pkg/openstack/openstacksim"
	"github.com/limbo-dev/limbo/pkg/plugins/routegc"
)

// The route soak's shape: routeHops routes on one router, each to a next hop
// that a server holds or not; one Bundle with a route-gc resource polling every
// second.
const (
	routeHops     = 12
	routeRouterID = "5e0c7a1d-2b3c-4d5e-8f90-0a1b2c3d4e5f"
	routeCIDR     = "198.19.0.0/16"
	routeBundle   = "routes"
	routeResource = "route-gc"
	routeSecret   = "openstack"
)

// routeDelays are the resource's deletionDelay values; a Tombstone keeps the
// one of its creation.
var routeDelays = []string{"0s", "1s", "2s", "4s"}

// TestSoakRoutes runs route-gc's external items through the soft-delete engine
// at random — servers going and coming back, routes added again, Tombstones
// forced, the delay edited, the Bundle moved to the other shard — while the
// two shards' controllers (one process each) are killed and restarted at
// random, and checks every route removal with a routeOracle.
func TestSoakRoutes(t *testing.T) {
	run := startSoak(t, "route soak", fmt.Sprintf("%d routes", routeHops))
	ctx, namespace, seed, ops := run.ctx, run.namespace, run.seed, run.ops
	o := newRouteOracle()
	run.keepLog(t, &o.journal)
	sim := openstacksim.New(openstacksim.Config{OnRoutesChanged: func(_ string, before, after []openstacksim.Route) { o.routesChanged(before, after) }})
	base, stop, err := sim.Start("")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stop() }()

	// Every route starts with its server, and one more server holds no route's
	// hop: the listing is never empty (route-gc orphans nothing then).
	rng := rand.New(rand.NewPCG(uint64(seed), routeHops))
	routes := make([]openstacksim.Route, routeHops)
	for i := range routes {
		routes[i] = openstacksim.Route{Destination: fmt.Sprintf("198.19.%d.0/24", i), NextHop: fmt.Sprintf("10.180.0.%d", 10+i)}
	}
	sim.AddRouter(routeRouterID, "cluster-router", routes...)
	sim.AddServerAt("anchor", "10.180.1.1")
	for _, r := range routes {
		srv := sim.AddServerAt("node-"+r.NextHop, r.NextHop)
		o.addHop(r, srv.ID, time.Now())
	}

	c := sim.Config()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: routeSecret, Namespace: namespace}, StringData: map[string]string{
		routegc.KeyApplicationCredentialID: c.ApplicationCredentialID, routegc.KeyApplicationCredentialSecret: c.ApplicationCredentialSecret,
	}}
	if err := env.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	spec := fmt.Sprintf(`{"openstack":{"authURL":%q,"region":"RegionOne","credentialsSecretRef":{"name":%q}},"routerID":%q,"clusterCIDR":%q,"interval":"1s"}`,
		openstacksim.AuthURL(base), routeSecret, routeRouterID, routeCIDR)
	// The Bundle starts in either shard; move-shard moves it to the other.
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: routeBundle, Namespace: namespace}, Spec: limbov1alpha1.BundleSpec{
		Resources: []limbov1alpha1.Resource{{Name: routeResource, Plugin: &limbov1alpha1.PluginResource{
			Name: routegc.Name, DeletionDelay: routeDelays[rng.IntN(len(routeDelays))], Spec: &apiextensionsv1.JSON{Raw: []byte(spec)},
		}}},
	}}
	if rng.IntN(2) == 0 {
		b.Labels = map[string]string{shardLabel: shardA}
	}
	if err := env.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	o.Log("Bundle %s created in shard %s", b.Name, shardOfLabels(b.Labels))

	watchCtx, stopWatch := context.WithCancel(ctx)
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		o.watchTombstones(watchCtx, namespace)
	}()
	defer func() { stopWatch(); <-watchDone }()
	go func() {
		for watchCtx.Err() == nil {
			o.judge(time.Now())
			sleep(watchCtx, 250*time.Millisecond)
		}
	}()

	// kube-apiserver restarts are TestSoak's: here the oracle's Tombstone watch
	// must see every Tombstone a removal goes through.
	chaos := &chaos{oracle: o, controllers: run.startShards(t, t.TempDir()), pause: &sync.RWMutex{}, rng: rand.New(rand.NewPCG(uint64(seed), 1)), ops: ops, apiRestarted: true}
	defer chaos.killAll()

	g := &routeGenerator{oracle: o, sim: sim, rng: rng, namespace: namespace, bundle: b.Name}
	started := time.Now()
	chaosCtx, stopChaos := context.WithCancel(ctx)
	chaosDone := make(chan error, 1)
	go func() { chaosDone <- chaos.run(chaosCtx) }()
	for range ops {
		if ctx.Err() != nil {
			break
		}
		g.step(ctx)
		sleep(ctx, time.Duration(rng.Int64N(int64(maxThinkTime))))
	}
	stopChaos()
	if err := <-chaosDone; err != nil {
		t.Fatal(err)
	}
	if err := chaos.ensureRunning(ctx); err != nil {
		t.Fatal(err)
	}
	opsTime := time.Since(started)

	// Every countdown ends within the longest delay; then limbo polls, removes
	// and cancels. Until the end holds, or the wait is over.
	var final error
	if err := pollErr(ctx, 2*time.Minute, func() error { final = o.finalCheck(); return final }); err != nil {
		final = err
	}
	o.judge(time.Now().Add(judgeAfter))
	o.recordFinal(final)

	o.mu.Lock()
	violations := o.violations
	o.mu.Unlock()
	run.report(t, append(o.report(), fmt.Sprintf("time: %v of operations, %v in all", opsTime.Round(time.Second), time.Since(started).Round(time.Second))),
		violations, chaos.logPaths())
}

// routeGenerator performs the route soak's operations.
type routeGenerator struct {
	oracle    *routeOracle
	sim       *openstacksim.Server
	rng       *rand.Rand
	namespace string
	bundle    string
}

// step performs one operation, picked at random: a server deleted or created,
// a removed route added again, a Tombstone forced (deleted, as `kubectl delete
// tombstone` does), the delay edited, the Bundle moved to the other shard
// (its Tombstones carry the old shard's label: the new shard's first pass
// moves them into its own, docs/install.md "Sharding").
func (g *routeGenerator) step(ctx context.Context) {
	hops := g.hopsSnapshot()
	h := hops[g.rng.IntN(len(hops))]
	id := routeIDOf(h.route)
	switch n := g.rng.IntN(100); {
	case n < 35 && h.serverID != "":
		g.oracle.serverDown(id, time.Now())
		g.sim.DeleteServer(h.serverID)
		g.oracle.countOp("server-down")
	case n < 70 && h.serverID == "":
		g.serverUp(h)
	case n < 80 && !h.onRouter:
		if err := g.sim.AddRoutes(routeRouterID, h.route); err == nil {
			g.oracle.Log("route %s added again", id)
			g.oracle.countOp("route-again")
		}
	case n < 88:
		if name := g.oracle.liveTombstone(id); name != "" {
			g.oracle.forced(name, time.Now())
			// What `kubectl delete tombstone` sends: a delete by name.
			err := env.Client.Delete(ctx, &limbov1alpha1.Tombstone{ObjectMeta: metav1.ObjectMeta{Namespace: g.namespace, Name: name}})
			if client.IgnoreNotFound(err) != nil {
				g.oracle.Log("delete Tombstone %s: %v", name, err)
			}
			g.oracle.countOp("force")
		}
	case n < 94:
		delay := routeDelays[g.rng.IntN(len(routeDelays))]
		err := g.updateBundle(ctx, func(b *limbov1alpha1.Bundle) { b.Spec.Resources[0].Plugin.DeletionDelay = delay })
		g.oracle.Log("deletionDelay %s: %v", delay, err)
		g.oracle.countOp("edit-delay")
	default:
		var to string
		err := g.updateBundle(ctx, func(b *limbov1alpha1.Bundle) {
			to = otherShard(shardOfLabels(b.Labels))
			if to == shardA {
				metav1.SetMetaDataLabel(&b.ObjectMeta, shardLabel, shardA)
			} else {
				delete(b.Labels, shardLabel)
			}
		})
		g.oracle.Log("move Bundle %s to shard %s: %v", g.bundle, to, err)
		g.oracle.countOp("move-shard")
		if g.oracle.liveTombstones() == 0 {
			return
		}
		// Counted apart: the Tombstones that carry the old shard's label.
		g.oracle.countOp("move-shard-in-limbo")
		// Half the time a route in limbo is desired again at once: the new
		// shard's first pass must find its Tombstone, which its cache does not
		// show, and cancel it (a new orphan decision would find it otherwise).
		if g.rng.IntN(2) == 0 {
			return
		}
		for _, h := range hops {
			if h.serverID == "" && g.oracle.liveTombstone(routeIDOf(h.route)) != "" {
				g.serverUp(h)
				g.oracle.countOp("move-shard-desired-again")
				return
			}
		}
	}
}

// serverUp creates a server on h's next hop: its route is desired again.
func (g *routeGenerator) serverUp(h hopModel) {
	srv := g.sim.AddServerAt("node-"+h.route.NextHop, h.route.NextHop)
	g.oracle.serverUp(routeIDOf(h.route), srv.ID, time.Now())
	g.oracle.countOp("server-up")
}

// updateBundle reads the Bundle, changes it and writes it, again on a conflict.
func (g *routeGenerator) updateBundle(ctx context.Context, change func(b *limbov1alpha1.Bundle)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var b limbov1alpha1.Bundle
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: g.namespace, Name: g.bundle}, &b); err != nil {
			return err
		}
		change(&b)
		return env.Client.Update(ctx, &b)
	})
}

// hopsSnapshot copies the hops, in route order.
func (g *routeGenerator) hopsSnapshot() []hopModel {
	g.oracle.mu.Lock()
	defer g.oracle.mu.Unlock()
	out := make([]hopModel, 0, len(g.oracle.hops))
	for i := range routeHops {
		r := openstacksim.Route{Destination: fmt.Sprintf("198.19.%d.0/24", i), NextHop: fmt.Sprintf("10.180.0.%d", 10+i)}
		out = append(out, *g.oracle.hops[routeIDOf(r)])
	}
	return out
}

// liveTombstones counts the Tombstones the watch sees.
func (o *routeOracle) liveTombstones() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, rec := range o.tombstones {
		if rec.gone.IsZero() {
			n++
		}
	}
	return n
}

// liveTombstone is the name of a Tombstone of route id the watch sees, or "".
func (o *routeOracle) liveTombstone(id string) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, rec := range o.tombstones {
		if rec.itemID == id && rec.gone.IsZero() {
			return rec.name
		}
	}
	return ""
}

// watchTombstones feeds the oracle every Tombstone of the namespace: a list,
// then a watch from it; when the watch ends, a new list (what it no longer
// holds went meanwhile) and a new watch.
func (o *routeOracle) watchTombstones(ctx context.Context, namespace string) {
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: controller.NewScheme()})
	if err != nil {
		o.Log("watch client: %v", err)
		return
	}
	for ctx.Err() == nil {
		var list limbov1alpha1.TombstoneList
		if err := wc.List(ctx, &list, client.InNamespace(namespace)); err != nil {
			sleep(ctx, 200*time.Millisecond)
			continue
		}
		now := time.Now()
		listed := map[types.UID]bool{}
		for i := range list.Items {
			listed[list.Items[i].UID] = true
			o.observe(&list.Items[i], false, now)
		}
		o.goneUnseen(listed, now)
		w, err := wc.Watch(ctx, &limbov1alpha1.TombstoneList{}, client.InNamespace(namespace), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
		if err != nil {
			continue
		}
		o.mu.Lock()
		o.watchingSince = time.Now()
		o.mu.Unlock()
		for ev := range w.ResultChan() {
			ts, ok := ev.Object.(*limbov1alpha1.Tombstone)
			if !ok {
				break // an error event: list again
			}
			o.observe(ts, ev.Type == watch.Deleted, time.Now())
		}
		w.Stop()
	}
}
