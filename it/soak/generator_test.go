package soak

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// The shape of the run: slots Bundles, each with up to resourcesPerBundle
// ConfigMaps named <bundle>-r<i>.
const (
	resourcesPerBundle = 5
	// settleTimeout bounds the wait for limbo to apply a Bundle, and for a
	// Bundle's teardown; past it the run reports the Bundle as not converging.
	settleTimeout = 90 * time.Second
	maxThinkTime  = 400 * time.Millisecond
	// maxMisses bounds the operations in a row that had nothing to act on or
	// failed (for example while a Bundle's teardown does not end).
	maxMisses = 300
)

// delays are the limbo.dev/deletionDelay values templates get; "" is none
// (deleted at once when orphaned).
var delays = []string{"", "0s", "1s", "2s", "3s", "4s", "6s"}

var bundleGVR = schema.GroupVersionResource{Group: limbov1alpha1.GroupVersion.Group, Version: limbov1alpha1.GroupVersion.Version, Resource: "bundles"}

// generator performs the run's operations. Each Bundle slot has a worker of
// its own, with a random source derived from the seed, so that the operations
// of every Bundle are a function of the seed (their interleaving, and the
// controller's timing, are not).
type generator struct {
	oracle     *oracle
	namespace  string
	clientset  kubernetes.Interface
	dynamic    dynamic.Interface
	kubectl    string // the kubectl-limbo binary
	kubeconfig string
	// skip lists operations not to perform.
	skip map[string]bool
	// pause is held (read) by every mutation, and (write) across a
	// kube-apiserver restart, so that no write is in doubt.
	pause *sync.RWMutex
	// awaitingPause, when set (a test's), is called by every mutation right
	// before it waits for pause: what it checked before is decided by then.
	awaitingPause func()
	// slots are every Bundle slot of the run: a hand-over writes the spec of
	// another one than its own.
	slots []*slot
}

// slot is one Bundle name and the spec the generator last wrote for it.
type slot struct {
	// mu is held by the slot's worker while it performs an operation, and by
	// the worker of another slot that hands an object over to this one.
	mu   sync.Mutex
	name string
	rng  *rand.Rand
	// uid is the live Bundle's UID; empty while there is none.
	uid types.UID
	// resources maps resource name to its delay, as declared (or, while
	// guarded, as declared before the spec was emptied). A resource handed
	// over from another Bundle is named after its object (see objectOf).
	resources map[string]string
	// adopt lists resources declared with limbo.dev/adopt: "true" (objects
	// without a controller that are not the Bundle's by label).
	adopt map[string]bool
	// generated lists resources declared as a generator — a resource of the
	// configmap plugin, whose plan makes the object the template would be, its
	// delay the resource's plugin.deletionDelay — rather than as a template.
	// Never one declared to adopt: a plugin's objects carry no limbo.dev/adopt.
	generated map[string]bool
	// guarded: the spec was emptied without allowEmpty; the resources are
	// kept (DESIGN §2) until the spec is restored or allowEmpty is set.
	guarded bool
	// held are the objects that were in limbo (orphans counting down) when the
	// spec was emptied: the guard holds them too, deadline or not, and lets
	// their countdowns go on when it ends.
	held []string
	// holdUntil: the guard is not ended before this time, past the deadlines
	// of the held objects, so that a guard that let a countdown run out would
	// show as a deletion.
	holdUntil time.Time
	// retired: the garbage collector still holds the deleted Bundle; the slot
	// sits out the rest of the run.
	retired bool
	// deps maps a declared resource to the resources it depends on (a
	// reference without a name, which only orders). Only resources of a lower
	// index are depended on, so the graph has no cycle.
	deps map[string][]string
	// invalid is the spec error the spec carries (one of faults); empty while
	// it is valid. faultDelays and faultRefs are that error: delays and
	// references that the spec's templates carry on top of the model's.
	invalid     string
	faultDelays map[string]string
	faultRefs   map[string][]string
	// gated: the Bundle also declares gateResource, a Widget whose readiness
	// the generator sets (mark-unready, mark-ready). gateUnready: its status
	// says Ready False; it is kept by a Bundle deleted with --cascade=orphan
	// and adopted, still not Ready, by the next Bundle of the name.
	gated, gateUnready bool
	// shard is the shard the Bundle is in (shardA or shardRest): every write
	// of its spec carries its label (see writeSpec).
	shard string
}

// The spec errors the generator writes (DESIGN §2: "never a reason to delete
// anything"), each on a Bundle that declares objects.
const (
	faultInvalidDelay      = "invalid-delay"      // limbo.dev/deletionDelay "banana" or "-5s" on a template
	faultMissingDependency = "missing-dependency" // a reference to a resource the Bundle does not have
	faultDependencyCycle   = "dependency-cycle"   // two resources that depend on each other
)

var invalidDelays = []string{"banana", "-5s"}

// gateResource is the resource of a gated Bundle whose readiness the
// generator controls: a Widget (it/testdata/crds, installed with the control
// plane) named <bundle>-gate, without a delay. kstatus calls a Widget whose
// Ready condition is False InProgress, and limbo holds the Bundle's orphans
// while it is (DESIGN §3, step 6); the resources that depend on it are Blocked
// meanwhile. It is no ConfigMap: the oracle does not watch it, and judges
// what it holds, not its own deletion.
const gateResource = "gate"

var widgetGVR = schema.GroupVersionResource{Group: "test.limbo.dev", Version: "v1", Resource: "widgets"}

// declares tells whether s's spec declares resource r.
func (s *slot) declares(r string) bool {
	return hasKey(s.resources, r) || (r == gateResource && s.gated && !s.guarded)
}

// dependOn picks the dependencies of resource r among the declared resources
// of a lower index (the gate is lower than any): none a third of the time,
// else one or two. adopt: r's object exists and the Bundle is to take it over;
// then not on a gate that is not Ready, at any depth: limbo leaves a Blocked
// resource's object as it is, and one left behind by --cascade=orphan and never
// adopted would outlive the Bundle's deletion with --cascade=foreground (not
// its dependent), which the model does not foresee.
func dependOn(s *slot, r string, adopt bool) []string {
	var lower []string
	block := map[string]bool{}
	if adopt {
		block = blocked(s)
	}
	if s.gated && (!adopt || !s.gateUnready) {
		lower = append(lower, gateResource)
	}
	for _, d := range slices.Sorted(maps.Keys(s.resources)) {
		if d < r && !block[d] {
			lower = append(lower, d)
		}
	}
	if len(lower) == 0 || s.rng.IntN(3) == 0 {
		return nil
	}
	s.rng.Shuffle(len(lower), func(i, j int) { lower[i], lower[j] = lower[j], lower[i] })
	return slices.Sorted(slices.Values(lower[:1+s.rng.IntN(min(2, len(lower)))]))
}

// dropDeps removes every dependency on the resources gone: a spec that
// references a resource it does not declare is invalid.
func dropDeps(s *slot, gone ...string) {
	for r, deps := range s.deps {
		deps = slices.DeleteFunc(slices.Clone(deps), func(d string) bool { return slices.Contains(gone, d) || !s.declares(d) })
		if len(deps) == 0 || !hasKey(s.resources, r) {
			delete(s.deps, r)
		} else {
			s.deps[r] = deps
		}
	}
}

func objectName(bundle, resource string) string { return bundle + "-" + resource }

// objectOf is the name of the object of s's resource r: <bundle>-<r>, or r
// itself for an object handed over from another Bundle, which keeps its name
// (resourceOf).
func (s *slot) objectOf(r string) string {
	if strings.Contains(r, "-") {
		return r
	}
	return objectName(s.name, r)
}

// resourceOf is the resource of s that declares object name: r for
// <bundle>-<r>, the object's name for another Bundle's.
func (s *slot) resourceOf(name string) string {
	if r, ok := strings.CutPrefix(name, s.name+"-"); ok {
		return r
	}
	return name
}

// elsewhere tells whether the object of v is another Bundle's: declared by
// another slot, or controlled by a Bundle of another name (handed over).
// s declares it only by a hand-over (handOver), never by add or create: its
// resource would be ControlledByOther, and s not Ready, which the model does
// not foresee there.
func elsewhere(s *slot, v view) bool {
	return slices.ContainsFunc(v.declarers, func(b string) bool { return b != s.name }) ||
		(controllerUID(v.meta) != "" && v.meta.Labels[limbov1alpha1.LabelBundle] != s.name)
}

func resourceName(i int) string { return "r" + strconv.Itoa(i) }

// run performs ops operations on s, then returns.
func (g *generator) run(ctx context.Context, s *slot, ops int) {
	misses := 0
	for done := 0; done < ops && ctx.Err() == nil && !s.retired; {
		s.mu.Lock()
		stepped := g.step(ctx, s)
		// Drawn under the lock: a hand-over to s draws from s.rng too.
		think := time.Duration(s.rng.Int64N(int64(maxThinkTime)))
		s.mu.Unlock()
		if stepped {
			done, misses = done+1, 0
		} else if misses++; misses > maxMisses {
			g.oracle.mu.Lock()
			g.oracle.violatef("harness: %d operations in a row on Bundle %s found nothing to act on or failed; giving up after %d of %d", misses, s.name, done, ops)
			g.oracle.mu.Unlock()
			return
		}
		sleep(ctx, think)
	}
}

// op is an operation the generator picks at random, with its weight.
type op struct {
	name   string
	weight int
	do     func(context.Context, *slot) bool
}

// notWhileGiving are the operations not made on a Bundle while one of its
// objects is handed over to another Bundle, which waits for the end of its
// countdown. Those that make the Bundle hold its orphans: a spec error or an
// emptied spec writes nothing, so the generator would wait for the adoption,
// and the Bundle's worker might end its run with the hold on. A gate not Ready
// does not hold a hand-over (it deletes nothing, session 33): mark-unready is
// made, and until a run saw an object handed over while its giver was not
// Ready (handOverGiverNotReady), picked more often on a Bundle that gives one
// away. The Bundle's deletion is made (the teardown releases the object to the
// adopter, whom the object's change wakes), and once a run right after a
// hand-over (handOverGiverDeleted).
var notWhileGiving = map[string]bool{
	"empty-guarded": true, "empty-guarded-holding": true,
	faultInvalidDelay: true, faultMissingDependency: true, faultDependencyCycle: true,
}

// ops are the operations picked at random on a Bundle that exists, and is
// neither guarded nor invalid.
func (g *generator) ops() []op {
	return []op{
		{"add", 18, g.add}, {"remove", 18, g.remove}, {"edit-template-delay", 8, g.editTemplateDelay},
		{"edit-live-delay", 8, g.editLiveDelay}, {"invalid-live-delay", 6, g.invalidLiveDelay}, {"fix-live-delay", 10, g.fixLiveDelay},
		{"force-delete", 8, g.forceDelete}, {"expedite", 8, g.expedite},
		{"cancel", 6, g.cancel}, {"empty", 3, g.empty}, {"empty-guarded", 4, g.emptyGuarded(false)},
		{"empty-guarded-holding", 3, g.emptyGuarded(true)},
		{faultInvalidDelay, 4, g.invalidSpec(faultInvalidDelay)},
		{faultMissingDependency, 4, g.invalidSpec(faultMissingDependency)},
		{faultDependencyCycle, 4, g.invalidSpec(faultDependencyCycle)},
		{"delete-bundle-background", 4, g.deleteBundle(fateBackground)},
		{"delete-bundle-orphan", 2, g.deleteBundle(fateOrphan)},
		{"delete-bundle-foreground", 2, g.deleteBundle(fateForeground)},
		{"mark-unready", 8, g.markUnready}, {"mark-ready", 10, g.markReady},
		{"hand-over", 6, g.handOver}, {"move-shard", 6, g.moveShard}, {"drift", 5, g.drift},
	}
}

// expectedOps are the operations a run performs at least once unless skipped:
// the ones picked at random and the ones that follow them (create after a
// Bundle's deletion, re-add of an object in limbo, the two ends of a guard, the
// fix of a spec error).
func (g *generator) expectedOps() []string {
	var names []string
	follow := map[string][]string{
		"add":                  {"create", "re-add"},
		"empty-guarded":        {"restore", "allow-empty"},
		faultInvalidDelay:      {"fix-spec"},
		faultMissingDependency: {"fix-spec"},
		faultDependencyCycle:   {"fix-spec"},
	}
	for _, o := range g.ops() {
		if !g.skip[o.name] {
			names = append(append(names, o.name), follow[o.name]...)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// step picks and performs one operation; false if the one picked had nothing
// to act on.
func (g *generator) step(ctx context.Context, s *slot) bool {
	if s.uid == "" {
		return g.create(ctx, s)
	}
	if s.guarded {
		sleep(ctx, time.Until(s.holdUntil))
		// restore is the chance of a restore, in fourths: even, unless one of
		// the two ends was not done yet in the run (see expectedOps): that one
		// 3 times in 4.
		restore := 2
		switch done, _, _ := g.oracle.opCounts(); {
		case done["restore"] == 0 && done["allow-empty"] > 0:
			restore = 3
		case done["allow-empty"] == 0 && done["restore"] > 0:
			restore = 1
		}
		if s.rng.IntN(4) < restore {
			return g.restore(ctx, s)
		}
		return g.allowEmpty(ctx, s)
	}
	if s.invalid != "" {
		sleep(ctx, time.Until(s.holdUntil))
		return g.fixSpec(ctx, s)
	}
	var ops []op
	total := 0
	done, ordered, keptNotReady := g.oracle.opCounts()
	handOvers, givingAway, moves := g.oracle.handOverCounts(), g.oracle.givingAway(s.uid), g.oracle.moveCounts()
	for _, o := range g.ops() {
		if g.skip[o.name] || (notWhileGiving[o.name] && givingAway) {
			continue
		}
		if done[o.name] == 0 || (o.name == "delete-bundle-background" && ordered == 0 && len(s.deps) > 0) ||
			(keptNotReady == 0 && ((o.name == "mark-unready" && s.gated) || (o.name == "remove" && s.gateUnready))) ||
			(o.name == "hand-over" && len(missingVariants(handOvers)) > 0) ||
			(o.name == "move-shard" && len(missingMoves(moves)) > 0) ||
			(o.name == "mark-unready" && givingAway && handOvers[handOverGiverNotReady] == 0) ||
			(o.name == "invalid-live-delay" && done["fix-live-delay"] == 0) {
			// Not done yet in the run (or no teardown in waves yet, and this
			// Bundle has dependencies; or no orphan kept by a gate not Ready
			// yet, and this Bundle has a gate; or a variant of hand-over not
			// done yet, or no object adopted yet, or none handed over by a
			// Bundle not Ready, and this one gives one away; or no invalid
			// delay fixed yet — fix-live-delay needs an object whose delay
			// is invalid in this slot, and a re-add, cancel or deletion
			// often takes the one made before it is picked, seed
			// 768164610): picked more often, so that even the short form
			// does every operation (see expectedOps, notCovered).
			o.weight *= 4
		}
		ops = append(ops, o)
		total += o.weight
	}
	// Most operations need something to act on (an object in limbo, say): try
	// a few, so that the rarer ones happen too.
	for range 4 {
		n := s.rng.IntN(total)
		for _, o := range ops {
			if n -= o.weight; n < 0 {
				if o.do(ctx, s) {
					return true
				}
				break
			}
		}
	}
	return false
}

// mutate runs write as operation op on s: counted, logged, and with
// deletions observed meanwhile judged once the model is updated.
func (g *generator) mutate(s *slot, op, detail string, write func() error) error {
	if g.awaitingPause != nil {
		g.awaitingPause()
	}
	g.pause.RLock()
	defer g.pause.RUnlock()
	g.oracle.begin(s.name)
	defer g.oracle.end(s.name)
	err := write()
	if err != nil {
		g.oracle.Log("%s %s %s: %v", s.name, op, detail, err)
		return err
	}
	g.oracle.countOp(op, s.gateUnready && op != "mark-unready" && op != "mark-ready")
	g.oracle.Log("%s %s %s", s.name, op, detail)
	return nil
}

func (g *generator) randomDelay(s *slot) string { return delays[s.rng.IntN(len(delays))] }

// --- the Bundle's spec ---

func (g *generator) template(s *slot, resource string) map[string]any {
	if s.generated[resource] {
		return g.generatorTemplate(s, resource)
	}
	annotations := map[string]any{}
	if d := s.resources[resource]; d != "" {
		annotations[limbov1alpha1.AnnotationDeletionDelay] = d
	}
	if s.adopt[resource] {
		annotations[limbov1alpha1.AnnotationAdopt] = "true"
	}
	if d, ok := s.faultDelays[resource]; ok {
		annotations[limbov1alpha1.AnnotationDeletionDelay] = d
	}
	references := g.references(s, resource)
	template := map[string]any{
		"name": resource,
		"object": map[string]any{
			"apiVersion": "v1",
			"kind":       "ConfigMap",
			"metadata": map[string]any{
				"name":        s.objectOf(resource),
				"labels":      map[string]any{"soak": "true"},
				"annotations": annotations,
			},
			"data": map[string]any{"bundle": s.name},
		},
	}
	if len(references) > 0 {
		template["references"] = references
	}
	return template
}

// generatorTemplate is resource r of s as a configmap plugin resource: it
// generates the ConfigMap template would declare (its name and data), with the
// declared delay (or the spec error's) as its plugin.deletionDelay.
func (g *generator) generatorTemplate(s *slot, r string) map[string]any {
	plugin := map[string]any{"name": "configmap", "spec": map[string]any{"name": s.objectOf(r), "data": map[string]any{"bundle": s.name}}}
	if d := s.resources[r]; d != "" {
		plugin["deletionDelay"] = d
	}
	if d, ok := s.faultDelays[r]; ok {
		plugin["deletionDelay"] = d
	}
	out := map[string]any{"name": r, "plugin": plugin}
	if references := g.references(s, r); len(references) > 0 {
		out["references"] = references
	}
	return out
}

// references are the references of s's resource r, a template's or a
// generator's: its dependencies and the spec error's.
func (g *generator) references(s *slot, r string) []any {
	var out []any
	for _, d := range append(slices.Clone(s.deps[r]), s.faultRefs[r]...) {
		out = append(out, map[string]any{"resource": d})
	}
	return out
}

// declareAs records how resource r of s is declared: as a generator a third
// of the time, unless it is declared to adopt.
func declareAs(s *slot, r string) {
	s.generated[r] = !s.adopt[r] && s.rng.IntN(3) == 0
}

// gateTemplate is the template of s's gate: a Widget without a delay.
func (g *generator) gateTemplate(s *slot) map[string]any {
	return map[string]any{
		"name": gateResource,
		"object": map[string]any{
			"apiVersion": widgetGVR.GroupVersion().String(),
			"kind":       "Widget",
			"metadata":   map[string]any{"name": objectName(s.name, gateResource), "labels": map[string]any{"soak": "true"}},
			"spec":       map[string]any{"bundle": s.name},
		},
	}
}

// spec is the Bundle spec for s: its resources (none while guarded, the gate
// included) and allowEmpty.
func (g *generator) spec(s *slot, allowEmpty bool) map[string]any {
	resources := []any{}
	if s.declares(gateResource) {
		resources = append(resources, g.gateTemplate(s))
	}
	if !s.guarded {
		for _, r := range slices.Sorted(maps.Keys(s.resources)) {
			resources = append(resources, g.template(s, r))
		}
	}
	return map[string]any{"resources": resources, "allowEmpty": allowEmpty}
}

func (g *generator) bundles() dynamic.ResourceInterface {
	return g.dynamic.Resource(bundleGVR).Namespace(g.namespace)
}

func revision(obj metav1.Object) int64 {
	rv, _ := strconv.ParseInt(obj.GetResourceVersion(), 10, 64)
	return rv
}

// writeSpec patches the spec of s's Bundle, and its shard label (the same,
// unless a move-shard changed s.shard), and returns the revision written.
func (g *generator) writeSpec(ctx context.Context, s *slot, allowEmpty bool) (int64, error) {
	patch, err := json.Marshal(map[string]any{"spec": g.spec(s, allowEmpty),
		"metadata": map[string]any{"labels": map[string]any{shardLabel: shardLabelValue(s.shard)}}})
	if err != nil {
		return 0, err
	}
	obj, err := g.bundles().Patch(ctx, s.name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return 0, err
	}
	g.noteGenerators(s)
	return revision(obj), nil
}

// noteGenerators tells the oracle whether the spec just written for s
// declares a generator resource (see oracle.generators).
func (g *generator) noteGenerators(s *slot) {
	generates := false
	for r := range s.resources {
		generates = generates || s.generated[r]
	}
	g.oracle.declaresGenerators(s.name, s.uid, generates && !s.guarded, time.Now())
}

func (g *generator) objectNames(s *slot, resources ...string) []string {
	names := make([]string, len(resources))
	for i, r := range resources {
		names[i] = s.objectOf(r)
	}
	return names
}

// needsAdopt: an object that exists without a controller and without this
// Bundle's label is only taken over with limbo.dev/adopt (a cancelled one).
func needsAdopt(s *slot, v view) bool {
	return v.exists && controllerUID(v.meta) == "" && v.meta.Labels[limbov1alpha1.LabelBundle] != s.name
}

// --- operations ---

// create creates s's Bundle with a random set of resources; objects still in
// limbo from an earlier Bundle of the same name are declared only when that
// cannot race their deadline.
func (g *generator) create(ctx context.Context, s *slot) bool {
	s.resources, s.adopt, s.generated, s.guarded, s.deps = map[string]string{}, map[string]bool{}, map[string]bool{}, false, map[string][]string{}
	now := time.Now()
	for i := range resourcesPerBundle {
		r := resourceName(i)
		v := g.oracle.view(objectName(s.name, r))
		if s.rng.IntN(2) == 0 || !g.oracle.safeToDeclare(v, now) || elsewhere(s, v) {
			continue
		}
		if deps := dependOn(s, r, v.exists); len(deps) > 0 {
			s.deps[r] = deps
		}
		s.resources[r] = g.randomDelay(s)
		s.adopt[r] = needsAdopt(s, v)
		declareAs(s, r)
	}
	s.shard = []string{shardA, shardRest}[s.rng.IntN(2)]
	metadata := map[string]any{"name": s.name, "namespace": g.namespace}
	if s.shard == shardA {
		metadata["labels"] = map[string]any{shardLabel: shardA}
	}
	bundle := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": limbov1alpha1.GroupVersion.String(),
		"kind":       "Bundle",
		"metadata":   metadata,
		"spec":       g.spec(s, len(s.resources) == 0),
	}}
	err := g.mutate(s, "create", fmt.Sprintf("%v depends %v generated %v", s.resources, s.deps, trueKeys(s.generated)), func() error {
		if err := g.stillSafe(g.objectNames(s, slices.Sorted(maps.Keys(s.resources))...)...); err != nil {
			return err
		}
		obj, err := g.bundles().Create(ctx, bundle, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		s.uid = obj.GetUID()
		g.oracle.inShard(s.name, s.uid, s.shard, time.Now())
		g.noteGenerators(s)
		g.oracle.declared(s.name, revision(obj), g.objectNames(s, slices.Sorted(maps.Keys(s.resources))...)...)
		if s.gateUnready {
			// The gate a --cascade=orphan left behind, not Ready: the new
			// Bundle adopts it as it is.
			g.oracle.holdStarted(holdNotReady, s.uid, revision(obj))
		}
		return nil
	})
	return err == nil
}

// add declares a resource that the Bundle does not declare: new, or back from
// limbo (which cancels its countdown).
func (g *generator) add(ctx context.Context, s *slot) bool { return g.addResource(ctx, s, nil) }

// addResource is add, in a write that moves the Bundle to the other shard
// too with mv.
func (g *generator) addResource(ctx context.Context, s *slot, mv *shardMove) bool {
	now := time.Now()
	var candidates []string
	for i := range resourcesPerBundle {
		r := resourceName(i)
		if v := g.oracle.view(objectName(s.name, r)); !hasKey(s.resources, r) && g.oracle.safeToDeclare(v, now) && !elsewhere(s, v) {
			candidates = append(candidates, r)
		}
	}
	if len(candidates) == 0 {
		return false
	}
	r := candidates[s.rng.IntN(len(candidates))]
	v := g.oracle.view(objectName(s.name, r))
	if deps := dependOn(s, r, v.exists && controllerUID(v.meta) != s.uid); len(deps) > 0 {
		s.deps[r] = deps
	}
	s.resources[r] = g.randomDelay(s)
	s.adopt[r] = needsAdopt(s, v)
	declareAs(s, r)
	op := "add"
	if v.exists {
		op = "re-add"
	}
	ok := g.writeSpecAs(ctx, s, op, fmt.Sprintf("%s delay=%q adopt=%v generated=%v depends %v", r, s.resources[r], s.adopt[r], s.generated[r], s.deps[r]), mv,
		func() error { return g.stillSafe(objectName(s.name, r)) },
		func(rv int64) { g.oracle.declared(s.name, rv, objectName(s.name, r)) })
	if !ok {
		delete(s.resources, r)
		delete(s.deps, r)
		delete(s.generated, r)
	}
	return ok
}

// remove takes a resource out of the Bundle: its object goes to limbo.
func (g *generator) remove(ctx context.Context, s *slot) bool {
	if len(s.resources) == 0 {
		return false
	}
	g.settle(ctx, s)
	keys := slices.Sorted(maps.Keys(s.resources))
	return g.removeResource(ctx, s, keys[s.rng.IntN(len(keys))], nil)
}

// removeResource takes resource r out of the Bundle, which has converged (in
// a write that moves it to the other shard too with mv).
func (g *generator) removeResource(ctx context.Context, s *slot, r string, mv *shardMove) bool {
	delay, deps := s.resources[r], cloneDeps(s.deps)
	delete(s.resources, r)
	dropDeps(s, r) // the resources that depended on it no longer do
	ok := g.writeSpecAs(ctx, s, "remove", r, mv, nil,
		func(rv int64) { g.oracle.undeclared(s.name, rv, time.Now(), s.objectOf(r)) })
	if !ok {
		s.resources[r], s.deps = delay, deps
	}
	return ok
}

// editTemplateDelay changes the delay a resource's template declares.
func (g *generator) editTemplateDelay(ctx context.Context, s *slot) bool {
	if len(s.resources) == 0 {
		return false
	}
	keys := slices.Sorted(maps.Keys(s.resources))
	r := keys[s.rng.IntN(len(keys))]
	old := s.resources[r]
	s.resources[r] = g.randomDelay(s)
	err := g.mutate(s, "edit-template-delay", fmt.Sprintf("%s %q->%q", r, old, s.resources[r]), func() error {
		_, err := g.writeSpec(ctx, s, false)
		return err
	})
	if err != nil {
		s.resources[r] = old
	}
	return err == nil
}

// pick returns a random existing object of s that keep accepts.
func (g *generator) pick(s *slot, keep func(view) bool) (string, view, bool) {
	var names []string
	var views []view
	for i := range resourcesPerBundle {
		name := objectName(s.name, resourceName(i))
		if v := g.oracle.view(name); v.exists && keep(v) {
			names, views = append(names, name), append(views, v)
		}
	}
	if len(names) == 0 {
		return "", view{}, false
	}
	i := s.rng.IntN(len(names))
	return names[i], views[i], true
}

// inLimbo: an object no Bundle declares, not cancelled, with a delay (valid
// or not).
func inLimbo(v view) bool {
	_, hasDelay := v.meta.Annotations[limbov1alpha1.AnnotationDeletionDelay]
	return !v.desired && !v.foreign && hasDelay
}

// counting: an object in limbo whose delay is valid, so that its countdown
// runs (or waits for a hold).
func counting(v view) bool { return inLimbo(v) && !invalidDelay(v.meta) }

// editLiveDelay sets a new delay on an object in limbo, as `kubectl annotate
// --overwrite` would: its deadline moves (DESIGN §4).
func (g *generator) editLiveDelay(ctx context.Context, s *slot) bool {
	name, v, ok := g.pick(s, counting)
	if !ok {
		return false
	}
	return g.setLiveDelay(ctx, s, "edit-live-delay", name, v, delays[1+s.rng.IntN(len(delays)-1)])
}

// invalidLiveDelay sets an invalid delay on an object in limbo, as a user's
// typo would: limbo never deletes it until the delay is valid again (DESIGN
// §4; docs/soft-delete.md "Invalid delays"); a stamp it carries stays.
func (g *generator) invalidLiveDelay(ctx context.Context, s *slot) bool {
	name, v, ok := g.pick(s, counting)
	if !ok {
		return false
	}
	return g.setLiveDelay(ctx, s, "invalid-live-delay", name, v, invalidDelays[s.rng.IntN(len(invalidDelays))])
}

// fixLiveDelay sets a valid delay on an object whose delay is invalid: its
// countdown runs from the stamp it carries (written before the delay became
// invalid), or from a stamp written now.
func (g *generator) fixLiveDelay(ctx context.Context, s *slot) bool {
	name, v, ok := g.pick(s, func(v view) bool { return invalidDelay(v.meta) })
	if !ok {
		return false
	}
	return g.setLiveDelay(ctx, s, "fix-live-delay", name, v, delays[1+s.rng.IntN(len(delays)-1)])
}

// setLiveDelay writes delay on the object of v, as operation op; the UID is a
// precondition (never the next incarnation), and a write that lands first
// makes limbo decide again (its deletes carry a resourceVersion precondition).
func (g *generator) setLiveDelay(ctx context.Context, s *slot, op, name string, v view, delay string) bool {
	err := g.mutate(s, op, fmt.Sprintf("%s %q->%q", name, v.meta.Annotations[limbov1alpha1.AnnotationDeletionDelay], delay), func() error {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
			"annotations": map[string]any{limbov1alpha1.AnnotationDeletionDelay: delay},
			"uid":         v.uid,
		}})
		_, err := g.clientset.CoreV1().ConfigMaps(g.namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err == nil {
			g.oracle.touched(v.uid, time.Now())
		}
		return err
	})
	return err == nil
}

// forceDelete deletes an object of s, as `kubectl delete --force` would:
// limbo re-creates it if its Bundle declares it.
func (g *generator) forceDelete(ctx context.Context, s *slot) bool {
	name, v, ok := g.pick(s, func(view) bool { return true })
	if !ok {
		return false
	}
	err := g.mutate(s, "force-delete", fmt.Sprintf("%s uid %s (desired %v)", name, short(v.uid), v.desired), func() error {
		// Marked before the DELETE, inside the operation: the watch may see
		// the deletion before the DELETE returns, and a deletion seen
		// meanwhile is judged after it (mutate). A DELETE refused leaves
		// the object limbo's: its deletion by limbo is judged as any other.
		g.oracle.forcing(v.uid)
		err := g.clientset.CoreV1().ConfigMaps(g.namespace).Delete(ctx, name, metav1.DeleteOptions{
			GracePeriodSeconds: new(int64),
			Preconditions:      &metav1.Preconditions{UID: &v.uid},
		})
		if refused(err) {
			g.oracle.notForced(v.uid)
		}
		return err
	})
	return err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err)
}

// refused tells whether a write failed with an answer that it was not done
// (the object gone, a precondition failed, invalid, forbidden...), rather than
// with no answer or one that leaves it in doubt (a timeout, an internal error).
func refused(err error) bool {
	var status apierrors.APIStatus
	if err == nil || !errors.As(err, &status) {
		return false
	}
	return !apierrors.IsTimeout(err) && !apierrors.IsServerTimeout(err) && !apierrors.IsInternalError(err) &&
		!apierrors.IsUnexpectedServerError(err) && !apierrors.IsServiceUnavailable(err)
}

// kubectlLimbo runs `kubectl limbo <verb> configmap/<name>`.
func (g *generator) kubectlLimbo(ctx context.Context, verb, name string) error {
	cmd := exec.CommandContext(ctx, g.kubectl, verb, "configmap/"+name, "-n", g.namespace, "--kubeconfig", g.kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("kubectl limbo %s: %v: %s", verb, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// expedite runs `kubectl limbo expedite` on a stamped object in limbo.
func (g *generator) expedite(ctx context.Context, s *slot) bool {
	name, v, ok := g.pick(s, func(v view) bool {
		_, stamped := parseStamp(v.meta)
		return counting(v) && stamped // kubectl limbo refuses an invalid delay
	})
	if !ok {
		return false
	}
	err := g.mutate(s, "expedite", name, func() error {
		err := g.kubectlLimbo(ctx, "expedite", name)
		if err == nil {
			g.oracle.touched(v.uid, time.Now())
		}
		return err
	})
	return err == nil || strings.Contains(err.Error(), "not found")
}

// cancel runs `kubectl limbo cancel` on an object in limbo: it becomes an
// unmanaged object that nothing deletes.
func (g *generator) cancel(ctx context.Context, s *slot) bool {
	name, _, ok := g.pick(s, func(v view) bool {
		_, stamped := parseStamp(v.meta)
		// Only an object of s's Bundle: one handed over to another Bundle keeps
		// its name, and that Bundle's spec may be invalid meanwhile, which the
		// oracle judges a release at (at once: it cannot tell the cancel's from
		// limbo's).
		return inLimbo(v) && (stamped || v.meta.Labels[limbov1alpha1.LabelPendingDeletion] != "") &&
			v.meta.Labels[limbov1alpha1.LabelBundle] == s.name
	})
	if !ok {
		return false
	}
	err := g.mutate(s, "cancel", name, func() error {
		err := g.kubectlLimbo(ctx, "cancel", name)
		if err == nil {
			g.oracle.cancelled(name)
		}
		return err
	})
	if err == nil {
		// The next operation on s decides on the oracle's view of the
		// object: one that still shows it the Bundle's would re-add it
		// without limbo.dev/adopt, and the object, now nobody's, would be
		// NotOwned for good (seed 850750713: a re-add 34 ms after the cancel).
		_ = pollErr(ctx, settleTimeout, func() error {
			v := g.oracle.view(name)
			_, stamped := v.meta.Annotations[limbov1alpha1.AnnotationDeletionTimestamp]
			if v.exists && (stamped || v.meta.Labels[limbov1alpha1.LabelPendingDeletion] != "") {
				return fmt.Errorf("the cancel of %s is not seen yet", name)
			}
			return nil
		})
	}
	return err == nil || strings.Contains(err.Error(), "not found")
}

// The variants of a hand-over (handOver): the order of its two writes, a swap
// (two Bundles exchange objects at once), and whether the Bundle it leaves is
// deleted right after; and its outcomes that a run must see: the object adopted
// (the same one, not made anew), and one handed over while a resource of the
// Bundle it leaves was not Ready (the generator makes its gate not Ready while
// the object waits for its deadline).
const (
	handOverRemoveFirst   = "remove-first"
	handOverAddFirst      = "add-first"
	handOverSwap          = "swap"
	handOverGiverDeleted  = "giver-deleted"
	handOverAdopted       = "adopted"
	handOverGiverNotReady = "giver-not-ready"
	// handOverAcrossShards: the Bundle that takes the object is in the other
	// shard; the release writes the adopter's shard label, so that the
	// adopter's cache shows the object and its release wakes the adopter, as
	// within one shard (until session 35 it was adopted only at the
	// adopter's 30 s recheck, inTheWayRecheck, and made once a run).
	handOverAcrossShards = "across-shards"
)

// missingVariants are the variants (and outcomes) of hand-over that counts
// lacks, the orders first.
func missingVariants(counts map[string]int) []string {
	return missingOf(counts, handOverAddFirst, handOverRemoveFirst, handOverSwap, handOverGiverDeleted, handOverAdopted, handOverGiverNotReady, handOverAcrossShards)
}

// missingOf are the variants, in the order given, that counts has none of.
func missingOf(counts map[string]int, variants ...string) []string {
	var none []string
	for _, v := range variants {
		if counts[v] == 0 {
			none = append(none, v)
		}
	}
	return none
}

// handOver moves a resource of s to another Bundle of the run, as a user
// moving an object (a PVC and its data) from one Bundle to another does
// (docs/soft-delete.md, "Moving an object from one Bundle to another"): the
// other Bundle declares the same object (same name) with limbo.dev/adopt:
// "true", and s drops it — in either order. At the end of its countdown s
// hands the object over instead of deleting it (its teardown releases it at
// once), and the other Bundle adopts it. From the other Bundle's write on, the
// oracle keeps the object declared (never deleted, by s's countdown or
// teardown), holds the other Bundle's orphans until it is seen adopting it
// (holdAdopting: its resource is not Ready meanwhile), and settle of that
// Bundle wants it controlled by it and out of limbo. Remove-first waits,
// between the two writes, until the object is gone or cannot be deleted
// within redeclareGuard (a write of another Bundle's spec cannot be ordered
// against a delete decided a moment before): without a delay, the object goes
// with the removal and the other Bundle makes a new one. Once a run (the first
// hand-over), s is deleted right after, with any cascade: a teardown
// releases the object to its adopter, --cascade=orphan leaves it to it, and
// --cascade=foreground has the garbage collector delete it if s still
// controls it ("everything now", DESIGN §3), and the adopter makes a new one.
func (g *generator) handOver(ctx context.Context, s *slot) bool {
	if s.gateUnready || len(s.resources) == 0 || g.oracle.adoptingInto(s.uid) {
		// A gate not Ready holds s's countdowns; so does an adoption s waits
		// for (see receiver).
		return false
	}
	missing := missingVariants(g.oracle.handOverCounts())
	if slices.Contains(missing, handOverGiverNotReady) && !s.gated && s.rng.IntN(2) == 0 {
		// Only a gated Bundle gives an object away while not Ready: until a
		// run saw it, the picks of hand-over (boosted while a variant is
		// missing) go to the gated ones more often (seed 587083118: 12
		// hand-overs, one from a gated Bundle, and none while not Ready).
		return false
	}
	g.settle(ctx, s)
	// Once a run (see notWhileGiving).
	deleteGiver := slices.Contains(missing, handOverGiverDeleted)
	keys := slices.Sorted(maps.Keys(s.resources))
	// s's gate made not Ready while the object waits for its deadline, until a
	// run saw a hand-over then: an object with a delay that leaves the time to.
	unready := !deleteGiver && s.gated && slices.Contains(missing, handOverGiverNotReady)
	if long := longDelayed(s); unready && len(long) > 0 {
		keys = long
	} else {
		unready = false
	}
	r := keys[s.rng.IntN(len(keys))]
	name := s.objectOf(r)
	if v := g.oracle.view(name); invalidDelay(v.meta) || declaredByOther(v, s.name) {
		// Never due: s would never hand it over. Or another Bundle waits
		// to adopt it already — one that declared it when a hand-over to it
		// left the object gone and s's create made it anew (seed 27222360):
		// the model has one adopter per object.
		return false
	}
	t := g.receiver(ctx, s, name)
	if t == nil {
		return false
	}
	defer t.mu.Unlock()
	// The hold on t's orphans must not race a stamp or a deletion that t's
	// pass decided before it saw the write (as for markUnready).
	if _, _, ok := g.stampedOrphans(ctx, t); !ok {
		return false
	}
	if !unready && (slices.Contains(missing, handOverSwap) || s.rng.IntN(3) == 0) {
		if q, ok := g.swapPick(ctx, s, t); ok {
			ok := g.swap(ctx, s, t, r, q)
			if ok && t.shard != s.shard {
				g.oracle.handedOver(handOverAcrossShards)
			}
			return ok
		}
	}
	order := []string{handOverRemoveFirst, handOverAddFirst}[s.rng.IntN(2)]
	if slices.Contains(missing, handOverRemoveFirst) != slices.Contains(missing, handOverAddFirst) {
		order = missing[0] // the order not done yet
	}

	mv := g.move(s, t, r)
	removed, declared := false, false
	remove := func() error {
		rv, err := g.writeSpec(ctx, s, len(s.resources) == 0)
		if err != nil {
			return err
		}
		g.oracle.undeclared(s.name, rv, time.Now(), name)
		removed = true
		return nil
	}
	declare := func() error {
		if err := g.holdSafe(t, ""); err != nil {
			return err
		}
		rv, err := g.writeSpec(ctx, t, false)
		if err != nil {
			return err
		}
		g.oracle.declared(t.name, rv, name)
		g.oracle.adopting(t.name, t.uid, rv, name)
		declared = true
		return nil
	}
	g.oracle.begin(t.name) // the object's deletion, seen meanwhile, is judged once both writes are in the model
	err := g.mutate(s, "hand-over", fmt.Sprintf("%s to %s (%s; delay %q, depends %v)", name, t.name, order, t.resources[mv.tr], t.deps[mv.tr]), func() error {
		if order == handOverAddFirst {
			if err := declare(); err != nil {
				return err
			}
			// t waits for it now: s must drop it (no write fails for good
			// while kube-apiserver runs).
			return pollErr(ctx, settleTimeout, remove)
		}
		if err := remove(); err != nil {
			return err
		}
		if err := pollErr(ctx, 20*time.Second, func() error { return g.stillSafe(name) }); err != nil {
			return err
		}
		return pollErr(ctx, 20*time.Second, declare) // until t's orphans are safe too (holdSafe)
	})
	g.oracle.end(t.name)
	if !removed {
		mv.undoRemove()
	}
	if !declared {
		mv.undoDeclare()
	}
	if err != nil {
		return removed
	}
	g.oracle.handedOver(order)
	if t.shard != s.shard {
		g.oracle.handedOver(handOverAcrossShards)
	}
	if deleteGiver && g.deleteBundle([]fate{fateBackground, fateBackground, fateOrphan, fateForeground}[s.rng.IntN(4)])(ctx, s) {
		g.oracle.handedOver(handOverGiverDeleted)
	}
	if unready && g.markUnready(ctx, s) {
		// The gate stays not Ready until s handed the object over (at its
		// deadline: a hand-over deletes nothing), or the adoption rule
		// reports it late.
		_ = pollErr(ctx, settleTimeout, func() error {
			if v := g.oracle.view(name); v.exists && controllerUID(v.meta) == s.uid {
				return fmt.Errorf("%s not handed over yet", name)
			}
			return nil
		})
	}
	return true
}

// longDelayed are the resources of s whose delay is 3 s or more, sorted: an
// object of theirs stays in limbo long enough for an operation to come in
// between (its delay is the template's once s has converged).
func longDelayed(s *slot) []string {
	var long []string
	for _, r := range slices.Sorted(maps.Keys(s.resources)) {
		if d, err := time.ParseDuration(s.resources[r]); err == nil && d >= 3*time.Second {
			long = append(long, r)
		}
	}
	return long
}

// move is the model's side of handing the object of s's resource r over to
// t: s no longer declares it, and t declares it (under tr, see resourceOf)
// with limbo.dev/adopt, a delay and dependencies of its own. undoRemove and
// undoDeclare take either side back when its write was not made.
type move struct {
	s, t  *slot
	r, tr string
	// delay, adopt, generated and deps are s's before.
	delay            string
	adopt, generated bool
	deps             map[string][]string
}

func (g *generator) move(s, t *slot, r string) *move {
	mv := &move{s: s, t: t, r: r, tr: t.resourceOf(s.objectOf(r)), delay: s.resources[r], adopt: s.adopt[r], generated: s.generated[r], deps: cloneDeps(s.deps)}
	delete(s.resources, r)
	delete(s.adopt, r)
	delete(s.generated, r)
	dropDeps(s, r)
	t.resources[mv.tr], t.adopt[mv.tr] = g.randomDelay(t), true
	if deps := dependOn(t, mv.tr, true); len(deps) > 0 {
		t.deps[mv.tr] = deps
	}
	return mv
}

func (mv *move) undoRemove() {
	mv.s.resources[mv.r], mv.s.adopt[mv.r], mv.s.generated[mv.r], mv.s.deps = mv.delay, mv.adopt, mv.generated, mv.deps
}

func (mv *move) undoDeclare() {
	delete(mv.t.resources, mv.tr)
	delete(mv.t.adopt, mv.tr)
	delete(mv.t.deps, mv.tr)
}

// swapPick picks a resource q of t whose object s may take in a swap (t
// locked): t's gate is Ready, its object is t's, applied, with a valid delay,
// and s declares no object of its name. False if there is none (or t does not
// converge, or an orphan of s is not stamped yet: s waits to adopt from the
// swap's first write on, see stampedOrphans).
func (g *generator) swapPick(ctx context.Context, s, t *slot) (string, bool) {
	if t.gateUnready || len(t.resources) == 0 {
		return "", false
	}
	g.settle(ctx, t)
	var candidates []string
	for _, q := range slices.Sorted(maps.Keys(t.resources)) {
		y := t.objectOf(q)
		v := g.oracle.view(y)
		if v.exists && controllerUID(v.meta) == t.uid && !invalidDelay(v.meta) && !s.declaresObject(y) && !declaredByOther(v, t.name) && !hasKey(s.resources, s.resourceOf(y)) {
			candidates = append(candidates, q)
		}
	}
	if len(candidates) == 0 {
		return "", false
	}
	if _, _, ok := g.stampedOrphans(ctx, s); !ok {
		return "", false
	}
	return candidates[s.rng.IntN(len(candidates))], true
}

// declaredByOther tells whether a Bundle other than slot declares the object
// of v (to adopt it, or in a hand-over's overlap).
func declaredByOther(v view, slot string) bool {
	return slices.ContainsFunc(v.declarers, func(d string) bool { return d != slot })
}

// swap is a hand-over both ways at once: s drops its resource r's object x and
// declares t's resource q's object y to adopt it, in one write, and t then
// drops y and declares x, in one write. From its write on each Bundle waits to
// adopt (not Ready: its resource of the other's object is ControlledByOther),
// and until t's write x is an orphan of s that no Bundle adopts, which s's
// readiness holds (the oracle's holdAdopting on s: neither stamped nor deleted).
// From t's write on each counts down and hands over the object the other
// declares to adopt, not Ready as it is (a hand-over deletes nothing: session
// 33, it/bundle_adoption_swap_test.go); before that fix the two waited for
// each other for good. The oracle keeps both objects declared from the
// adopter's write on, wants each handed over through limbo at its deadline
// (judgeHandOver) and adopted in time (checkAdoptionLocked), and settle wants
// them adopted.
func (g *generator) swap(ctx context.Context, s, t *slot, r, q string) bool {
	x, y := s.objectOf(r), t.objectOf(q)
	toT := g.move(s, t, r)
	toS := g.move(t, s, q)
	written := map[*slot]bool{}
	write := func(b *slot, gone, taken string) error {
		if err := g.holdSafe(b, gone); err != nil {
			return err
		}
		rv, err := g.writeSpec(ctx, b, false)
		if err != nil {
			return err
		}
		g.oracle.undeclared(b.name, rv, time.Now(), gone)
		g.oracle.declared(b.name, rv, taken)
		g.oracle.adopting(b.name, b.uid, rv, taken)
		written[b] = true
		return nil
	}
	g.oracle.begin(t.name) // as in handOver
	err := g.mutate(s, "hand-over", fmt.Sprintf("%s to %s for %s (%s; delays %q and %q, depends %v and %v)",
		x, t.name, y, handOverSwap, t.resources[toT.tr], s.resources[toS.tr], t.deps[toT.tr], s.deps[toS.tr]), func() error {
		if err := write(s, x, y); err != nil {
			return err
		}
		// s waits for y now: t must give it (no write fails for good while
		// kube-apiserver runs).
		return pollErr(ctx, settleTimeout, func() error { return write(t, y, x) })
	})
	g.oracle.end(t.name)
	if !written[t] {
		toS.undoRemove()
		toT.undoDeclare()
	}
	if !written[s] {
		toT.undoRemove()
		toS.undoDeclare()
	}
	if err != nil {
		return written[s]
	}
	g.oracle.handedOver(handOverSwap)
	return true
}

// receiver picks another slot to hand object name over to, and returns it
// locked; nil if none may take it now. Its worker's lock is only tried: two
// workers that hand objects to each other must not wait for each other. The
// receiver waits for no other adoption (one hold at a time, see adopting) and
// hands nothing over itself: a Bundle that waits to adopt an object holds its
// orphans, so two Bundles that hand objects to each other would wait for each
// other for good (each resource ControlledByOther, DESIGN §3 step 6).
func (g *generator) receiver(ctx context.Context, s *slot, name string) *slot {
	var found *slot
	// The other workers are mostly in an operation: try for a moment.
	_ = pollErr(ctx, time.Second, func() error {
		for _, i := range s.rng.Perm(len(g.slots)) {
			t := g.slots[i]
			if t == s || !t.mu.TryLock() {
				continue
			}
			if t.uid != "" && !t.guarded && t.invalid == "" && !t.retired && !t.declaresObject(name) && !hasKey(t.resources, t.resourceOf(name)) &&
				!g.oracle.adoptingInto(t.uid) && !g.oracle.givingAway(t.uid) {
				found = t
				return nil
			}
			t.mu.Unlock()
		}
		return fmt.Errorf("no Bundle may take %s now", name)
	})
	return found
}

// empty removes every resource, with allowEmpty: true.
func (g *generator) empty(ctx context.Context, s *slot) bool {
	g.settle(ctx, s)
	old, deps := s.resources, s.deps
	s.resources, s.deps = map[string]string{}, map[string][]string{}
	err := g.mutate(s, "empty", "allowEmpty=true", func() error {
		rv, err := g.writeSpec(ctx, s, true)
		if err != nil {
			return err
		}
		g.oracle.undeclared(s.name, rv, time.Now(), g.objectNames(s, slices.Sorted(maps.Keys(old))...)...)
		return nil
	})
	if err != nil {
		s.resources, s.deps = old, deps
	}
	return err == nil
}

func cloneDeps(deps map[string][]string) map[string][]string {
	out := make(map[string][]string, len(deps))
	for r, d := range deps {
		out[r] = slices.Clone(d)
	}
	return out
}

// emptyGuarded writes a spec without resources and without allowEmpty, as a
// broken render would: nothing may be deleted (DESIGN §2), so the model keeps
// every resource declared.
func (g *generator) emptyGuarded(holding bool) func(context.Context, *slot) bool {
	return func(ctx context.Context, s *slot) bool { return g.emptyGuard(ctx, s, holding) }
}

// emptyGuard is emptyGuarded; holding: only when orphans count down (the
// random pick of empty-guarded finds some only now and then).
func (g *generator) emptyGuard(ctx context.Context, s *slot, holding bool) bool {
	if len(s.resources) == 0 {
		return false
	}
	g.settle(ctx, s)
	for r := range s.resources {
		if !g.oracle.view(s.objectOf(r)).exists {
			// Blocked by a gate not Ready (settle does not wait for it), and
			// gone (force-deleted): a spec without templates would never make
			// it again, and the model keeps every resource declared.
			return false
		}
	}
	if held, _, ok := g.orphans(s); holding && ok && len(held) == 0 {
		// Nothing counts down: remove a resource with a delay of 3 s or
		// more first (orphans() refuses one due within redeclareGuard).
		long := longDelayed(s)
		if len(long) == 0 || len(s.resources) == 1 {
			return false // none, or the last one (the guard needs a resource)
		}
		if !g.removeResource(ctx, s, long[s.rng.IntN(len(long))], nil) {
			return false
		}
	}
	// The guard holds the countdowns that already run as well (it deletes
	// nothing): to the model, those orphans are kept like the declared
	// resources until the guard ends.
	held, lastDeadline, ok := g.orphans(s)
	if !ok || (holding && len(held) == 0) {
		return false
	}
	op := "empty-guarded"
	if len(held) > 0 {
		op = "empty-guarded-holding" // counted apart: the report shows the case ran
	}
	s.guarded = true
	err := g.mutate(s, op, fmt.Sprintf("allowEmpty=false, holding %v", held), func() error {
		if err := g.holdSafe(s, ""); err != nil { // the check above may be stale (markUnready)
			return err
		}
		rv, err := g.writeSpec(ctx, s, false)
		if err != nil {
			return err
		}
		g.oracle.declared(s.name, rv, held...)
		return nil
	})
	if err != nil {
		s.guarded = false
		return false
	}
	s.held, s.holdUntil = held, time.Time{}
	if s.rng.IntN(2) == 0 {
		s.holdUntil = lastDeadline.Add(time.Second)
	}
	return true
}

// orphans are the objects s's Bundle controls and no longer declares (counting
// down), and the latest of their deadlines; false when one of them may be
// deleted before a write lands (see redeclareGuard), as for a re-add: a write
// that is to hold them must not race them.
func (g *generator) orphans(s *slot) ([]string, time.Time, bool) {
	return g.orphansBut(s, "")
}

// orphansBut is orphans without the object except.
func (g *generator) orphansBut(s *slot, except string) ([]string, time.Time, bool) {
	var held []string
	var lastDeadline time.Time
	now := time.Now()
	for _, name := range g.oracle.controlled(s.uid) {
		if v := g.oracle.view(name); name != except && !s.declaresObject(name) && v.exists && controllerUID(v.meta) == s.uid {
			if !g.oracle.safeToDeclare(v, now) {
				return nil, time.Time{}, false
			}
			held = append(held, name)
			if at, ok := earliestDeletion(v, now); ok {
				lastDeadline = latest(lastDeadline, at)
			}
		}
	}
	return held, lastDeadline, true
}

// holdSafe re-checks, right before a write that starts a hold on b (an
// adoption it waits for, a gate made not Ready), that none of b's orphans but
// except (the object the write itself drops) may be deleted within
// redeclareGuard: the check made when
// the operation was picked may be stale by then, and no precondition orders
// the write against a delete limbo decided a moment before (seed 111301111: a
// swap's second write, 3.6 s after its check, landed as an overdue orphan of
// the same Bundle was deleted).
func (g *generator) holdSafe(b *slot, except string) error {
	if _, _, ok := g.orphansBut(b, except); !ok {
		return fmt.Errorf("not done: an orphan of %s may be deleted within %v", b.name, redeclareGuard)
	}
	return nil
}

// stampedOrphans is orphans, once every orphan with a delay is stamped (but
// those a hold keeps from it), an object s gives away to another Bundle
// included: a hold must not race a stamp that limbo decided before it, and is
// about to write (and a gate made not Ready while s gives an object away is
// made so while the object waits for its deadline, stamped). False if one is
// not stamped within a few seconds, or if orphans is.
func (g *generator) stampedOrphans(ctx context.Context, s *slot) ([]string, time.Time, bool) {
	err := pollErr(ctx, 5*time.Second, func() error {
		held, _, _ := g.orphans(s)
		for _, name := range held {
			v := g.oracle.view(name)
			givenAway := elsewhere(s, v) && hasKey(v.meta.Annotations, limbov1alpha1.AnnotationDeletionDelay) && !invalidDelay(v.meta)
			// An invalid delay is never stamped (nor deleted).
			if _, stamped := parseStamp(v.meta); !v.held && !stamped && (counting(v) || givenAway) {
				return fmt.Errorf("%s is not stamped yet", name)
			}
		}
		return nil
	})
	if err != nil {
		return nil, time.Time{}, false
	}
	return g.orphans(s)
}

// invalidSpec writes a spec with the error fault (and, two times in three,
// without one more resource), as a broken render would: limbo writes and deletes
// nothing of the Bundle until the spec is fixed (DESIGN §2, docs/soft-delete.md
// "Invalid delays") — neither the objects the spec declares, nor the object
// the same edit removed, nor the orphans already counting down, deadline or
// not. The oracle holds every object the Bundle controls while the spec is
// invalid; the next operation on s is fixSpec.
func (g *generator) invalidSpec(fault string) func(context.Context, *slot) bool {
	return func(ctx context.Context, s *slot) bool {
		keys := slices.Sorted(maps.Keys(s.resources))
		if len(keys) == 0 || (fault == faultDependencyCycle && len(keys) < 2) {
			return false
		}
		g.settle(ctx, s)
		held, lastDeadline, ok := g.stampedOrphans(ctx, s)
		if !ok {
			return false
		}
		s.rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		r := keys[0]
		s.faultDelays, s.faultRefs = map[string]string{}, map[string][]string{}
		detail := ""
		switch fault {
		case faultInvalidDelay:
			s.faultDelays[r] = invalidDelays[s.rng.IntN(len(invalidDelays))]
			detail = fmt.Sprintf("%s delay=%q", r, s.faultDelays[r])
		case faultMissingDependency:
			s.faultRefs[r] = []string{"ghost"}
			detail = fmt.Sprintf("%s depends on ghost", r)
		case faultDependencyCycle:
			s.faultRefs[r], s.faultRefs[keys[1]] = []string{keys[1]}, []string{r}
			detail = fmt.Sprintf("%s and %s depend on each other", r, keys[1])
		}
		old, deps := maps.Clone(s.resources), cloneDeps(s.deps)
		var removed []string
		rest := keys[1:] // the resources the error is not on
		if fault == faultDependencyCycle {
			rest = keys[2:]
		}
		var removedDelay time.Duration
		if len(rest) > 0 && s.rng.IntN(3) > 0 {
			removed = append(removed, rest[0])
			removedDelay, _ = time.ParseDuration(s.resources[rest[0]]) // "": 0
			delete(s.resources, rest[0])
			dropDeps(s, rest[0])
		}
		s.invalid = fault
		err := g.mutate(s, fault, fmt.Sprintf("%s, removing %v, holding %v", detail, removed, held), func() error {
			// The check above may be stale (markUnready); the object the
			// same edit removes is not an orphan before it lands.
			except := ""
			if len(removed) > 0 {
				except = s.objectOf(removed[0])
			}
			if err := g.holdSafe(s, except); err != nil {
				return err
			}
			rv, err := g.writeSpec(ctx, s, false)
			if err != nil {
				return err
			}
			g.oracle.undeclared(s.name, rv, time.Now(), g.objectNames(s, removed...)...)
			g.oracle.holdStarted(holdInvalidSpec, s.uid, rv)
			return nil
		})
		if err != nil {
			s.invalid, s.faultDelays, s.faultRefs, s.resources, s.deps = "", nil, nil, old, deps
			return false
		}
		// The error stays long enough for limbo to act on it (and to be
		// caught deleting); half the time past every deadline it holds, the
		// removed object's as if its countdown had started with the write.
		s.holdUntil = time.Now().Add(time.Second + time.Duration(s.rng.Int64N(int64(2*time.Second))))
		if s.rng.IntN(2) == 0 {
			if len(removed) > 0 {
				lastDeadline = latest(lastDeadline, time.Now().Add(removedDelay))
			}
			s.holdUntil = latest(s.holdUntil, lastDeadline.Add(time.Second))
		}
		return true
	}
}

// fixSpec writes the spec again without its error: the deletions the error
// held proceed, the removed object's countdown starts.
func (g *generator) fixSpec(ctx context.Context, s *slot) bool {
	fault, delays, refs := s.invalid, s.faultDelays, s.faultRefs
	s.invalid, s.faultDelays, s.faultRefs = "", nil, nil
	err := g.mutate(s, "fix-spec", fault, func() error {
		rv, err := g.writeSpec(ctx, s, len(s.resources) == 0)
		if err != nil {
			return err
		}
		g.oracle.holdEnded(holdInvalidSpec, s.uid, rv, time.Now())
		return nil
	})
	if err != nil {
		s.invalid, s.faultDelays, s.faultRefs = fault, delays, refs
		return false
	}
	return true
}

// restore writes the resources back after emptyGuarded, maybe without one.
func (g *generator) restore(ctx context.Context, s *slot) bool {
	s.guarded = false
	old, deps := maps.Clone(s.resources), cloneDeps(s.deps)
	var dropped []string
	if r := resourceName(s.rng.IntN(resourcesPerBundle)); hasKey(s.resources, r) && s.rng.IntN(2) == 0 {
		dropped = append(dropped, r)
		delete(s.resources, r)
		dropDeps(s, r)
	}
	err := g.mutate(s, "restore", fmt.Sprintf("without %v", dropped), func() error {
		// Emptied by the drop, the spec says allowEmpty, or the guard would
		// hold what the model takes for due (seed 875870693).
		rv, err := g.writeSpec(ctx, s, len(s.resources) == 0)
		if err != nil {
			return err
		}
		g.oracle.undeclared(s.name, rv, time.Now(), append(g.objectNames(s, dropped...), s.held...)...)
		return nil
	})
	if err != nil {
		s.guarded, s.resources, s.deps = true, old, deps
		return false
	}
	s.held = nil
	return true
}

// trueKeys are m's keys whose value is true, sorted.
func trueKeys(m map[string]bool) []string {
	var out []string
	for k, v := range m {
		if v {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func hasKey[V any](m map[string]V, k string) bool {
	_, ok := m[k]
	return ok
}

// allowEmpty sets allowEmpty: true after emptyGuarded: the deletions proceed.
func (g *generator) allowEmpty(ctx context.Context, s *slot) bool {
	old, deps := s.resources, s.deps
	err := g.mutate(s, "allow-empty", "", func() error {
		// Not guarded any more: a gated Bundle keeps its gate.
		s.resources, s.deps, s.guarded = map[string]string{}, map[string][]string{}, false
		rv, err := g.writeSpec(ctx, s, true)
		if err != nil {
			s.resources, s.deps, s.guarded = old, deps, true
			return err
		}
		g.oracle.undeclared(s.name, rv, time.Now(), append(g.objectNames(s, slices.Sorted(maps.Keys(old))...), s.held...)...)
		return nil
	})
	if err == nil {
		s.guarded, s.held = false, nil
	}
	return err == nil
}

// deleteBundle deletes s's Bundle with cascade f and waits until it is gone.
func (g *generator) deleteBundle(f fate) func(context.Context, *slot) bool {
	return func(ctx context.Context, s *slot) bool {
		g.settle(ctx, s)
		if f == fateOrphan && !g.quiet(ctx, s) {
			return false
		}
		policy := map[fate]metav1.DeletionPropagation{
			fateBackground: metav1.DeletePropagationBackground,
			fateOrphan:     metav1.DeletePropagationOrphan,
			fateForeground: metav1.DeletePropagationForeground,
		}[f]
		declared := g.objectNames(s, slices.Sorted(maps.Keys(s.resources))...)
		dependents := map[string][]string{} // object -> the objects that depend on it
		for r, deps := range s.deps {
			for _, d := range deps {
				dependents[s.objectOf(d)] = append(dependents[s.objectOf(d)], s.objectOf(r))
			}
		}
		err := g.mutate(s, "delete-bundle-"+string(f), fmt.Sprintf("depends %v", s.deps), func() error {
			if f == fateOrphan {
				if err := g.stillSafe(g.objectsOf(s)...); err != nil {
					return err
				}
			}
			body, err := g.clientset.CoreV1().RESTClient().Delete().
				AbsPath("/apis", bundleGVR.Group, bundleGVR.Version, "namespaces", g.namespace, bundleGVR.Resource, s.name).
				Body(&metav1.DeleteOptions{PropagationPolicy: &policy}).Do(ctx).Raw()
			if err != nil {
				return err
			}
			var deleted metav1.PartialObjectMetadata
			if err := json.Unmarshal(body, &deleted); err != nil {
				return err
			}
			rv := revision(&deleted)
			g.oracle.bundleDeleted(s.name, s.uid, f, rv)
			g.oracle.declaresGenerators(s.name, s.uid, false, time.Now()) // a Bundle being deleted holds nothing
			g.oracle.teardownOrder(s.uid, dependents)
			g.oracle.undeclared(s.name, rv, time.Now(), declared...)
			return nil
		})
		if err != nil {
			return false
		}
		uid := s.uid
		s.uid, s.resources, s.adopt, s.guarded, s.held, s.deps = "", map[string]string{}, map[string]bool{}, false, nil, nil
		// limbo's part: its teardown finalizer goes.
		holds := func(limbosOnly bool) error {
			b, err := g.bundles().Get(ctx, s.name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				return nil
			case err != nil:
				return fmt.Errorf("Bundle %s: %v", s.name, err)
			case limbosOnly && !slices.Contains(b.GetFinalizers(), limbov1alpha1.FinalizerTeardown):
				return nil
			}
			// What holds it: whose finalizers, since when, and what limbo last said.
			conditions, _, _ := unstructured.NestedSlice(b.Object, "status", "conditions")
			return fmt.Errorf("Bundle %s still exists: uid %s, finalizers %v, deletionTimestamp %v, conditions %v",
				s.name, short(b.GetUID()), b.GetFinalizers(), b.GetDeletionTimestamp(), conditions)
		}
		poll(ctx, settleTimeout, func() error { return holds(true) }, g.oracle, "teardown of "+s.name)
		// The rest is the garbage collector's: its finalizers orphan and
		// foregroundDeletion. After a kube-apiserver restart it was seen to keep
		// orphan on a Bundle for minutes (limbo's finalizer long gone): the
		// cluster's, not limbo's. The slot sits out the rest of the run, since no
		// Bundle of its name can be created meanwhile.
		if err := pollErr(ctx, settleTimeout, func() error { return holds(false) }); err != nil && ctx.Err() == nil {
			evidence := collectorEvidence(uid)
			g.oracle.mu.Lock()
			g.oracle.logf("%s: %v; the garbage collector's part, not limbo's: %s sits out the rest of the run", s.name, err, s.name)
			g.oracle.stats.collectorHolds++
			g.oracle.stats.collectorEvidence = append(g.oracle.stats.collectorEvidence,
				fmt.Sprintf("the garbage collector held %s: %v; what kube-controller-manager logged about it and its monitors:", s.name, err))
			g.oracle.stats.collectorEvidence = append(g.oracle.stats.collectorEvidence, evidence...)
			g.oracle.mu.Unlock()
			s.retired = true
		}
		// The teardown deletes the gate, the garbage collector too, and the
		// next one is created without a status: Ready (kstatus: no
		// conditions). But a gate the Bundle did not control is left as it
		// is — kept by an earlier --cascade=orphan, and the Bundle deleted
		// before its first pass adopted it — and the next Bundle of the name
		// adopts it still not Ready (seed 808322342: its resources Blocked for
		// good, the model taking the gate for Ready).
		s.gateUnready = s.gateUnready && g.gateExists(ctx, s)
		return true
	}
}

// gateExists tells whether s's gate exists (asked until kube-apiserver
// answers, within settleTimeout).
func (g *generator) gateExists(ctx context.Context, s *slot) bool {
	exists := true
	_ = pollErr(ctx, settleTimeout, func() error {
		_, err := g.dynamic.Resource(widgetGVR).Namespace(g.namespace).Get(ctx, objectName(s.name, gateResource), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			exists = false
			return nil
		}
		return err
	})
	return exists
}

// blocked are the resources of s that depend, at any depth, on a gate that is
// not Ready: limbo leaves them Blocked, writing nothing (DESIGN §3, step 3).
func blocked(s *slot) map[string]bool {
	out := map[string]bool{}
	for changed := s.gateUnready; changed; {
		changed = false
		for r, deps := range s.deps {
			if !out[r] && slices.ContainsFunc(deps, func(d string) bool { return d == gateResource || out[d] }) {
				out[r], changed = true, true
			}
		}
	}
	return out
}

// drift changes the data of an object s declares and controls, as someone's
// kubectl edit would: limbo puts it back (objects are kept as declared), also
// after an edit made while the controller was down — a restarted controller
// must not take the object for one it applied and skip it
// (status.resources[].appliedDigest). keptAsDeclared checks at the end.
func (g *generator) drift(ctx context.Context, s *slot) bool {
	name, _, ok := g.pick(s, func(v view) bool { return v.desired && controllerUID(v.meta) == s.uid })
	if !ok {
		return false
	}
	return g.mutate(s, "drift", name, func() error { return g.driftObject(ctx, name) }) == nil
}

// driftObject changes the data of the object named name as kubectl edit would
// (an update by another field manager).
func (g *generator) driftObject(ctx context.Context, name string) error {
	_, err := g.clientset.CoreV1().ConfigMaps(g.namespace).Patch(ctx, name, types.MergePatchType, []byte(`{"data":{"bundle":"drifted"}}`),
		metav1.PatchOptions{FieldManager: "soak-drift"})
	return err
}

// driftWhileDown drifts, as drift does, a few objects of shard that a Bundle
// declares and controls, picked with rng: the chaos calls it while no
// controller of the shard runs (after a kill, before the process or its
// standby is back), the window where a restarted controller, which remembers
// no apply, could take the object for one it applied.
func (g *generator) driftWhileDown(ctx context.Context, shard string, rng *rand.Rand) {
	names := g.oracle.controlledIn(shard)
	for _, i := range rng.Perm(len(names))[:min(len(names), driftsWhileDown)] {
		if err := g.driftObject(ctx, names[i]); err != nil {
			g.oracle.Log("chaos: drift %s while shard %s is down: %v", names[i], shard, err)
			continue
		}
		g.oracle.countChaos("drift-while-down")
		g.oracle.Log("chaos: drift %s while shard %s is down", names[i], shard)
	}
}

// driftsWhileDown is how many objects driftWhileDown drifts at a time.
const driftsWhileDown = 3

// keptAsDeclared waits until every object s declares holds the data of its
// template — but those that a gate not Ready blocks (see settle): a drift
// limbo did not put back is a violation.
func (g *generator) keptAsDeclared(ctx context.Context, s *slot) {
	skip := blocked(s)
	poll(ctx, settleTimeout, func() error {
		for r := range s.resources {
			if skip[r] {
				continue
			}
			cm, err := g.clientset.CoreV1().ConfigMaps(g.namespace).Get(ctx, s.objectOf(r), metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got := cm.Data["bundle"]; got != s.name {
				return fmt.Errorf("%s has data.bundle %q, its template %q", cm.Name, got, s.name)
			}
		}
		return nil
	}, g.oracle, "Bundle "+s.name+"'s objects to hold what it declares")
}

// settle waits until limbo applied s's spec: every declared object exists,
// controlled by the Bundle, with the declared delay and out of limbo — but
// those that a gate not Ready blocks, which limbo leaves as they are.
// Operations that make objects leave the Bundle wait for it, so that what
// leaves is known.
func (g *generator) settle(ctx context.Context, s *slot) {
	skip := blocked(s)
	poll(ctx, settleTimeout, func() error {
		for r, delay := range s.resources {
			if skip[r] {
				continue
			}
			name := s.objectOf(r)
			v := g.oracle.view(name)
			got := v.meta.Annotations[limbov1alpha1.AnnotationDeletionDelay]
			_, stamped := v.meta.Annotations[limbov1alpha1.AnnotationDeletionTimestamp]
			switch {
			case !v.exists:
				return fmt.Errorf("%s does not exist", name)
			case controllerUID(v.meta) != s.uid:
				return fmt.Errorf("%s is not controlled by Bundle %s (uid %s)", name, s.name, short(s.uid))
			case v.meta.Labels[shardLabel] != map[string]string{shardA: shardA}[s.shard]:
				// Applied by the shard the Bundle is in, with its label
				// (a move-shard's new shard re-applies it).
				return fmt.Errorf("%s has %s=%q, its Bundle is in shard %s", name, shardLabel, v.meta.Labels[shardLabel], s.shard)
			case delay != "" && got != delay:
				// A template without a delay leaves one set by hand (an
				// edit-live-delay): server-side apply removes only fields
				// limbo owns. The oracle reads the live delay.
				return fmt.Errorf("%s has delay %q, declared %q", name, got, delay)
			case stamped || v.meta.Labels[limbov1alpha1.LabelPendingDeletion] != "" || hasKey(v.meta.Annotations, limbov1alpha1.AnnotationReleased):
				// A handed-over object too, once adopted (DESIGN §3, step 4:
				// its countdown cancelled).
				return fmt.Errorf("%s is still in limbo: %v", name, limboAnnotations(v.meta))
			}
		}
		return nil
	}, g.oracle, "Bundle "+s.name+" to converge")
}

// markUnready makes s's gate not Ready: its status, written as its operator
// would, says Ready False. From that write on, until markReady or the
// Bundle's deletion, limbo must neither stamp nor delete the Bundle's orphans
// (holdNotReady). Limbo reads the gate from its cache, the orphans from
// another: no precondition orders the status write against a stamp or a
// deletion decided a moment before, so the write is made only when none can
// come within redeclareGuard — every orphan with a delay is stamped, none is
// due soon — and the operation ends once the Bundle's status shows the gate
// not Ready (limbo saw it), so that the next operation on the Bundle is not
// raced either.
func (g *generator) markUnready(ctx context.Context, s *slot) bool {
	if !s.gated || s.gateUnready {
		return false
	}
	g.settle(ctx, s)
	if !g.gateSeen(ctx, s, limbov1alpha1.ResourceReady) {
		return false
	}
	held, _, ok := g.stampedOrphans(ctx, s)
	if !ok {
		return false
	}
	s.gateUnready = true
	err := g.mutate(s, "mark-unready", fmt.Sprintf("orphans %v", held), func() error {
		// The check above may be stale by now: a kube-apiserver restart
		// pauses the write (mutate), for 18 s in seed 283296643, while the
		// orphans' deadlines pass; one overdue when the write lands is
		// deleted by a pass that has not seen it yet.
		if err := g.holdSafe(s, ""); err != nil {
			return err
		}
		rv, err := g.setGate(ctx, s, false)
		if err != nil {
			return err
		}
		g.oracle.holdStarted(holdNotReady, s.uid, rv)
		return nil
	})
	if err != nil {
		s.gateUnready = false
		return false
	}
	g.gateSeen(ctx, s, limbov1alpha1.ResourceInProgress)
	return true
}

// markReady makes s's gate Ready again: what the Bundle held is due from
// then on.
func (g *generator) markReady(ctx context.Context, s *slot) bool {
	if !s.gateUnready {
		return false
	}
	err := g.mutate(s, "mark-ready", "", func() error {
		rv, err := g.setGate(ctx, s, true)
		if err != nil {
			return err
		}
		g.oracle.holdEnded(holdNotReady, s.uid, rv, time.Now())
		return nil
	})
	if err != nil {
		return false
	}
	s.gateUnready = false
	return true
}

// setGate writes the Ready condition of s's gate through the status
// subresource and returns the revision written.
func (g *generator) setGate(ctx context.Context, s *slot, ready bool) (int64, error) {
	status := "False"
	if ready {
		status = "True"
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": "Ready", "status": status, "reason": "Soak", "message": "set by the soak's generator"},
	}}})
	if err != nil {
		return 0, err
	}
	obj, err := g.dynamic.Resource(widgetGVR).Namespace(g.namespace).Patch(ctx, objectName(s.name, gateResource), types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return 0, err
	}
	return revision(obj), nil
}

// gateSeen waits until the status of s's Bundle, for its current generation,
// shows the gate in state; false (a violation past settleTimeout) if it does
// not.
func (g *generator) gateSeen(ctx context.Context, s *slot, state limbov1alpha1.ResourceState) bool {
	err := pollErr(ctx, settleTimeout, func() error {
		b, err := g.bundles().Get(ctx, s.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		observed, _, _ := unstructured.NestedInt64(b.Object, "status", "observedGeneration")
		resources, _, _ := unstructured.NestedSlice(b.Object, "status", "resources")
		for _, r := range resources {
			if r, _ := r.(map[string]any); r["name"] == gateResource {
				if r["state"] == string(state) && observed == b.GetGeneration() {
					return nil
				}
				return fmt.Errorf("the gate is %v (%v), generation %d observed %d, want %s", r["state"], r["message"], b.GetGeneration(), observed, state)
			}
		}
		return fmt.Errorf("the status of Bundle %s does not name the gate", s.name)
	})
	if err != nil && ctx.Err() == nil {
		g.oracle.mu.Lock()
		g.oracle.violatef("waited %v for Bundle %s to show its gate %s: %v", settleTimeout, s.name, state, err)
		g.oracle.mu.Unlock()
	}
	return err == nil
}

// quiet waits until no object of s may be deleted within redeclareGuard, so
// that a --cascade=orphan does not race a deadline.
func (g *generator) quiet(ctx context.Context, s *slot) bool {
	return pollErr(ctx, 20*time.Second, func() error { return g.stillSafe(g.objectsOf(s)...) }) == nil
}

// objectsOf are the objects s may control: those of its names, those it
// declares (handed over from other Bundles included) and those it controls.
func (g *generator) objectsOf(s *slot) []string {
	names := g.oracle.controlled(s.uid)
	for i := range resourcesPerBundle {
		names = append(names, objectName(s.name, resourceName(i)))
	}
	names = append(names, g.objectNames(s, slices.Collect(maps.Keys(s.resources))...)...)
	slices.Sort(names)
	return slices.Compact(names)
}

// declaresObject tells whether a resource of s declares object name.
func (s *slot) declaresObject(name string) bool {
	return slices.ContainsFunc(slices.Collect(maps.Keys(s.resources)), func(r string) bool { return s.objectOf(r) == name })
}

// stillSafe checks, right before a write, that none of the objects names may
// be deleted within redeclareGuard: the check made when the operation was
// picked may be stale by then (a kube-apiserver restart pauses writes).
func (g *generator) stillSafe(names ...string) error {
	now := time.Now()
	for _, name := range names {
		if !g.oracle.safeToDeclare(g.oracle.view(name), now) {
			return fmt.Errorf("not done: %s may be deleted within %v", name, redeclareGuard)
		}
	}
	return nil
}

// poll waits until cond holds; past timeout it reports a violation (limbo did
// not converge) and gives up.
func poll(ctx context.Context, timeout time.Duration, cond func() error, o *oracle, what string) {
	if err := pollErr(ctx, timeout, cond); err != nil && ctx.Err() == nil {
		o.mu.Lock()
		o.violatef("waited %v for %s: %v", timeout, what, err)
		o.mu.Unlock()
	}
}

func pollErr(ctx context.Context, timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		sleep(ctx, 50*time.Millisecond)
	}
}

// collectorEvidence is what kube-controller-manager logged about the Bundle
// whose UID is uid and about its garbage collector's monitors: the lines that
// name the UID, the collector or its graph, the last maxEvidence of them.
func collectorEvidence(uid types.UID) []string {
	const maxEvidence, maxLine = 40, 600
	path := env.Cluster.LogPath("kube-controller-manager")
	data, err := os.ReadFile(path)
	if err != nil {
		return []string{"  " + err.Error()}
	}
	var lines []string
	for line := range strings.Lines(string(data)) {
		lower := strings.ToLower(line)
		if strings.Contains(line, "FLAG:") {
			continue
		}
		if strings.Contains(line, string(uid)) || strings.Contains(lower, "garbage") || strings.Contains(lower, "graph_builder") ||
			strings.Contains(lower, "orphan") || strings.Contains(lower, "monitor") {
			line = strings.TrimRight(line, "\n")
			if len(line) > maxLine {
				line = line[:maxLine] + " …"
			}
			lines = append(lines, "  "+line)
		}
	}
	if len(lines) > maxEvidence {
		lines = append([]string{fmt.Sprintf("  (%d earlier lines in %s)", len(lines)-maxEvidence, path)}, lines[len(lines)-maxEvidence:]...)
	}
	return lines
}
