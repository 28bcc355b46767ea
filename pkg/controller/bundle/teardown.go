package bundle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/limbo-dev/limbo/pkg/apiconflict"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
	"github.com/limbo-dev/limbo/pkg/impersonation"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/softdelete"
	"github.com/limbo-dev/limbo/pkg/uninstall"
)

// teardown removes a deleted Bundle's content before its finalizer goes, modelled
// on the namespace controller: each pass deletes what it can, reports what remains
// and comes back.
//
//   - --cascade=orphan (finalizer orphan) and --cascade=foreground (finalizer
//     foregroundDeletion): the garbage collector orphans or deletes the dependents;
//     limbo deletes nothing and lets the Bundle go. The finalizer may be gone by
//     the first pass (the collector was quicker): the mode is then what the
//     Bundle's watch events or its history showed (see cascades).
//   - background (kubectl's default): objects go in reverse dependency order, each
//     wave once the previous one is gone. Objects with a deletion delay are released
//     to the reaper instead of deleted.
func (r *Reconciler) teardown(ctx context.Context, b *limbov1alpha1.Bundle) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(b, limbov1alpha1.FinalizerTeardown) {
		return ctrl.Result{}, nil
	}
	if r.Shard != nil {
		// A Bundle relabelled while being deleted is the new shard's to tear
		// down; this one's cache may not show the move yet (a watch
		// reconnecting), and two teardowns side by side would release and
		// delete twice, each with its events and status. One GET per teardown
		// pass, sharded only.
		cur, err := r.readBundleAgain(ctx, b)
		if err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		if cur.UID != b.UID || !r.Shard.Matches(cur.Labels) {
			log.FromContext(ctx).V(1).Info("the Bundle left the shard since the cache showed it: the other shard tears it down", "labels", cur.Labels)
			return ctrl.Result{RequeueAfter: leftShardRetry}, nil
		}
	}
	partial, specErrs := bundlespec.ParsePartial(b, r.Mapper, r.Plugins)
	plan := partial
	if len(specErrs) > 0 {
		plan = nil // an invalid spec: only its dependency order is used (the waves)
	}
	// Removing a cleanup job stops its deletions: pending Tombstones are cancelled,
	// never executed, whatever the cascade mode (the items stay). The items of a
	// plugin teardown are that teardown's, not a cleanup job's.
	if err := r.cancelTombstones(ctx, b, r.Client); err != nil {
		return ctrl.Result{}, err
	}
	itemFailures, err := r.cancelObjectItems(ctx, b, r.tearDownResources(plan))
	if err != nil {
		return ctrl.Result{}, err
	}
	// One listing serves the pass: the cascade mode's evidence, the objects to
	// orphan or the ones to delete. Whether the start scan was done is read
	// before it: a scan that ends during the pass may have watched a kind this
	// listing did not cover (letGo).
	own := kindsOf(b, plan)
	scanned := r.startScan.scanned()
	objects, err := r.labelled(ctx, b, withWatchedKinds(own, r.watcher.syncedKinds(ctx)))
	if err != nil {
		return ctrl.Result{}, err
	}
	listFresh := func() ([]*unstructured.Unstructured, error) { return r.labelledFresh(ctx, b, own) }
	// listedFresh is what letGo lists with once the waves are done.
	listedFresh := listFresh
	// unseen are the objects only the API server's listing showed (nextWave).
	var unseen map[string]bool
	if r.Shard != nil {
		// A sharded controller's cache shows only what carries its shard's
		// label. An object of a Bundle that moved into the shard keeps the old
		// shard's until a pass applies it again — never, for a resource
		// Blocked since the move — and the waves must see it to keep their
		// order (seed 101963686: db released before the app that depends on
		// it, which only the final listing found). One LIST per kind per
		// teardown pass, sharded only; a pass whose waves are done lets the
		// Bundle go on it (nothing of the Bundle's was written since).
		fresh, err := listFresh()
		if err != nil {
			return ctrl.Result{}, err
		}
		unseen = unseenBy(objects, fresh)
		objects = withUnseen(objects, fresh, unseen)
		listedFresh = func() ([]*unstructured.Unstructured, error) { return fresh, nil }
	}
	// limbo being uninstalled — its Bundle CRD deleted, and with it every
	// Bundle, in background — deletes nothing: as --cascade=orphan.
	uninstalling, err := uninstall.Going(ctx, r.APIReader, uninstall.BundlesCRD)
	if err != nil {
		return ctrl.Result{}, err
	}
	why := "the Bundle was deleted with --cascade=orphan"
	if uninstalling != "" {
		why = "limbo is being uninstalled: its CRD " + uninstalling + " is being deleted"
	}
	orphan := uninstalling != "" || r.deletedWithOrphanCascade(b, plan, objects)
	foreground := !orphan && r.deletedWith(b, metav1.FinalizerDeleteDependents)
	if !orphan && !foreground {
		// No evidence at hand: what did the delete say?
		cascade, err := r.cascadeInHistory(ctx, b)
		if err != nil {
			return ctrl.Result{}, err
		}
		orphan, foreground = cascade == metav1.FinalizerOrphanDependents, cascade == metav1.FinalizerDeleteDependents
	}
	if orphan { // nothing is deleted
		if err := r.orphanContent(ctx, b, objects, why); err != nil {
			return ctrl.Result{}, err
		}
		// Listed again: orphanContent wrote on what the first listing showed.
		return r.letGo(ctx, b, scanned, listFresh, func(fresh []*unstructured.Unstructured) (ctrl.Result, bool, error) {
			return ctrl.Result{}, false, r.orphanContent(ctx, b, fresh, why)
		})
	}
	if foreground {
		r.teardownsSkipped(ctx, b, controlledBy(b, objects))
		return ctrl.Result{}, r.removeFinalizer(ctx, b)
	}
	// Plugin teardowns run first: deorbit needs the objects still there.
	plugins := r.teardownPlugins(ctx, b, plan, specErrs)
	plugins.failures = append(itemFailures, plugins.failures...)
	if len(plugins.remaining) > 0 {
		if err := r.teardownStatus(ctx, b, plugins.remaining, plugins.failures, plugins, heldBy(controlledBy(b, objects))); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: min(teardownInterval, plugins.requeueAfter)}, nil
	}
	nextWave := func(unseen map[string]bool) func(objects []*unstructured.Unstructured) (ctrl.Result, bool, error) {
		return func(objects []*unstructured.Unstructured) (ctrl.Result, bool, error) {
			return r.nextWave(ctx, b, partial, controlledBy(b, objects), unseen, plugins)
		}
	}
	if res, acted, err := nextWave(unseen)(objects); acted || err != nil {
		return res, err
	}
	return r.letGo(ctx, b, scanned, listedFresh, nextWave(nil))
}

// nextWave deletes or releases the first wave of b's objects (those b controls)
// that holds any, reports it in b's status and returns the requeue that waits for
// it; acted is false when no wave holds an object. order is b's plan, valid or
// not (bundlespec.ParsePartial): only its dependency order is used. The
// requeue is teardownInterval, the pace between the watch events of the
// wave's objects, which bring the next pass as soon as the cache shows them
// released or gone; a wave whose objects were all unseen — shown by the API
// server's listing only, of another shard's label — sends no event, and once
// each is released or gone the next wave follows at once (waveUnseenRequeue):
// the next pass lists them from the API server too.
func (r *Reconciler) nextWave(ctx context.Context, b *limbov1alpha1.Bundle, order *bundlespec.Plan, objects []*unstructured.Unstructured, unseen map[string]bool, plugins pluginTeardowns) (_ ctrl.Result, acted bool, _ error) {
	held := heldBy(objects)
	adopters := r.adopters(b)
	// Looked up for every object of the wave: the templates are decoded, and
	// the status indexed, once.
	declarations, last := bundlespec.DeclarationsOf(b), lastResourcesOf(b)
	for _, wave := range teardownWaves(order, objects, recordedKeys(b)) {
		if len(wave) == 0 {
			continue
		}
		failures := plugins.failures // warnings of plugin teardowns that gave up
		// settled: every object of the wave is unseen, and released or gone.
		settled := true
		for _, o := range wave {
			if o.GetDeletionTimestamp() != nil {
				settled = false
				continue // on its way out
			}
			settled = settled && unseen[objectKey(o)]
			var err error
			// The audit trail names the resource the object was (the pass's does too).
			octx := log.IntoContext(ctx, log.FromContext(ctx).WithValues("resource", last.of(o)))
			if declarations.InLimbo(o.GetObjectKind().GroupVersionKind().GroupKind(), o) {
				// Its countdown is from before the spec declared it again: no
				// pass took it back (the Bundle deleted first, or a spec error
				// stopping every pass). Taken out of limbo, it is released by
				// the next pass with a countdown from the Bundle's deletion,
				// as every object the Bundle declared when it went; the old,
				// long due, had the reaper delete it at once.
				if _, err = r.Engine.Desired(octx, b, o); isTeardownFailure(err) {
					failures = append(failures, err.Error())
				}
				settled = false
				continue
			}
			if delay := declarations.Delay(o.GetObjectKind().GroupVersionKind().GroupKind(), o); softdelete.Lengthens(o.GetAnnotations(), delay) {
				// Its template declares a delay no pass wrote on it (its
				// resource Blocked, or its apply refused, until the Bundle
				// went): written first (as a pass does: keepDeclaredDelay),
				// and released with it by the next pass, not deleted.
				err = r.Engine.KeepDelay(octx, o, delay)
				if err == nil || holdsTeardown(err) {
					if isTeardownFailure(err) {
						failures = append(failures, err.Error())
					}
					settled = false
					continue
				}
				// Refused for good (a webhook, a schema the stored object no
				// longer meets): decided on the object as it is, as before
				// the template's delay, rather than held for ever.
				log.FromContext(octx).Info("could not write the template's deletion delay on an object of the teardown: decided on the object as it is",
					"object", objectKey(o), "error", err.Error())
			}
			adopter, adopted := adopters.releaseForAdoption(octx, o)
			if _, delayed := o.GetAnnotations()[limbov1alpha1.AnnotationDeletionDelay]; delayed || adopted {
				err = r.Engine.Release(octx, b, o, b, adopter)
				if err == nil || apierrors.IsNotFound(err) {
					delete(held, objectKey(o)) // the reaper's now (or gone)
				} else {
					settled = false
				}
			} else {
				out := r.Engine.Orphan(octx, b, o, softdelete.ControlledBy(b.UID))
				if err = out.Err; out.Gone {
					delete(held, objectKey(o))
				} else {
					settled = false
				}
			}
			if isTeardownFailure(err) {
				failures = append(failures, err.Error())
			}
			r.applied.forget(o.GetUID())
		}
		if err := r.teardownStatus(ctx, b, describeObjects(wave), failures, plugins, held); err != nil {
			return ctrl.Result{}, true, err
		}
		if settled {
			return ctrl.Result{RequeueAfter: waveUnseenRequeue}, true, nil
		}
		if len(failures) > len(plugins.failures) { // the wave's own writes failed
			return ctrl.Result{RequeueAfter: failingRetry(b, r.Clock.Now())}, true, nil
		}
		return ctrl.Result{RequeueAfter: teardownInterval}, true, nil
	}
	return ctrl.Result{}, false, nil
}

// failingRetry is how soon a teardown wave of b whose writes failed is tried
// again: as long after as its deletes have been failing (DeletionFailure True,
// DeleteFailed, since its last transition), from teardownInterval up to
// maxFailingRetry. A webhook refusing the deletes had every object read and sent
// a DELETE every 2 s, for good, on the client budget every tenant shares. Read
// from the status: a restart keeps the pace.
func failingRetry(b *limbov1alpha1.Bundle, now time.Time) time.Duration {
	c := meta.FindStatusCondition(b.Status.Conditions, limbov1alpha1.ConditionDeletionFailure)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != limbov1alpha1.ReasonDeleteFailed {
		return teardownInterval
	}
	return min(max(now.Sub(c.LastTransitionTime.Time), teardownInterval), maxFailingRetry)
}

// letGo removes b's finalizer once nothing of b's is left to find:
//
//   - once the start scan has tried every kind (scanned: it had when the pass
//     made its first listing, which covers the kinds the scan watched — the
//     scan ending during the pass would leave one of them unlisted): a kind
//     only that scan knows may hold one of b's objects (see startScan), which
//     must be found before the Bundle goes. What the teardown found meanwhile
//     is orphaned, deleted or released at once — due deletions are not held
//     back by the scan.
//   - once settle has found nothing more to do with b's objects as the API
//     server lists them (list: metadata only, by b's label). The teardown
//     decided on its cache, which may not show yet what a pass wrote a moment
//     before the delete (an object it created or adopted); the garbage
//     collector's graph may not either, and once the Bundle is gone the
//     collector deletes an object still controlled by it — at once, its
//     deletionDelay ignored, even after --cascade=orphan (the soak caught that,
//     seed 696338874). settle returns acted when it wrote something and the
//     teardown comes back. The kinds listed are those b's spec and status name
//     (kindsOf), which a pass's writes are of: a LIST each, once per Bundle
//     deleted, where every kind the controller watches would cost a mass
//     deletion (a namespace's) many times that. (A sharded teardown's list
//     returns the listing its pass began with, when nothing was written since.)
//
// (--cascade=foreground needs neither: the garbage collector deletes every
// dependent it knows.) The reaper is told (OnHoldEnded) and looks again at once.
func (r *Reconciler) letGo(ctx context.Context, b *limbov1alpha1.Bundle, scanned bool, list func() ([]*unstructured.Unstructured, error),
	settle func(fresh []*unstructured.Unstructured) (ctrl.Result, bool, error)) (ctrl.Result, error) {
	if !scanned {
		return ctrl.Result{RequeueAfter: startScanWait}, nil
	}
	fresh, err := list()
	if err != nil {
		return ctrl.Result{}, err
	}
	// An object b controls that lost its label is in no listing: found by
	// name, relabelled, it is settled as the others (recordedStrays).
	listed := keysOf(fresh)
	strays, err := r.recordedStrays(ctx, b, func(key string) bool { return listed[key] })
	if err != nil {
		return ctrl.Result{}, err
	}
	fresh = append(fresh, strays...)
	if res, acted, err := settle(fresh); acted || err != nil {
		return res, err
	}
	if err := r.removeFinalizer(ctx, b); err != nil {
		return ctrl.Result{}, err
	}
	if r.OnHoldEnded != nil {
		r.OnHoldEnded()
	}
	return ctrl.Result{}, nil
}

// isTeardownFailure reports whether err, from releasing or deleting one object
// of a wave, is a DeletionFailure: not when the object is gone already (NotFound
// is success), nor when it changed since the cache's copy the write was guarded
// by (Conflict: the next pass decides on the new one).
func isTeardownFailure(err error) bool {
	return err != nil && !apierrors.IsNotFound(err) && !apiconflict.Is(err)
}

// teardownWaves groups objects for deletion: objects no resource declares first,
// then the resources' objects in reverse dependency order. An object a generator
// plugin made goes in its plugin resource's wave (AnnotationGeneratedBy), after
// the objects of the resources that depend on it.
func teardownWaves(plan *bundlespec.Plan, objects []*unstructured.Unstructured, recorded map[string]string) [][]*unstructured.Unstructured {
	if plan == nil {
		return [][]*unstructured.Unstructured{objects}
	}
	byKey := map[string]*unstructured.Unstructured{}
	for _, o := range objects {
		byKey[objectKey(o)] = o
	}
	waves := [][]*unstructured.Unstructured{nil}
	// A spec that became invalid may reference a resource it does not declare,
	// or make a cycle: the references that can be ordered still are.
	resourceWaves, err := plan.Graph.Sortable().ReverseWaves()
	if err != nil { // cannot be: Sortable's graph sorts
		return [][]*unstructured.Unstructured{objects}
	}
	waveOf := map[string]int{} // plugin resource -> its wave
	for _, names := range resourceWaves {
		var wave []*unstructured.Unstructured
		for _, name := range names {
			if plan.Resources[name].Plugin != nil {
				waveOf[name] = len(waves)
			}
			key := plan.Resources[name].ObjectKey()
			if key == "" {
				// A template that cannot be read far enough to name its object
				// (a typo in its apiVersion): the object its status recorded.
				key = recorded[name]
			}
			if o, ok := byKey[key]; key != "" && ok {
				wave = append(wave, o)
				delete(byKey, key)
			}
		}
		waves = append(waves, wave)
	}
	for _, o := range objects { // undeclared and generated objects, in sorted order
		if _, ok := byKey[objectKey(o)]; !ok {
			continue
		}
		i, generated := waveOf[o.GetAnnotations()[limbov1alpha1.AnnotationGeneratedBy]]
		if !generated {
			i = 0
		}
		waves[i] = append(waves[i], o)
	}
	return waves
}

// recordedKeys are the keys (objectKey) of the objects b's status recorded, by
// resource.
func recordedKeys(b *limbov1alpha1.Bundle) map[string]string {
	keys := map[string]string{}
	for _, st := range b.Status.Resources {
		if st.Object != nil && st.Object.Name != "" {
			gv, err := schema.ParseGroupVersion(st.Object.APIVersion)
			if err == nil {
				keys[st.Name] = bundlespec.ObjectKey(gv.WithKind(st.Object.Kind).GroupKind(), st.Object.Name)
			}
		}
	}
	return keys
}

// cancelTombstones removes b's Tombstones, as reader lists them, without
// deleting their items. Every teardown pass lists them from the cache; the
// last, before b goes (removeFinalizer), from the API server: a cache shows only this
// controller's shard, and one that a pass made a moment ago may not be in it
// yet — missed, it outlived the Bundle, listed later by a Bundle of the same
// name that did not control it.
func (r *Reconciler) cancelTombstones(ctx context.Context, b *limbov1alpha1.Bundle, reader client.Reader) error {
	var tombstones limbov1alpha1.TombstoneList
	switch err := reader.List(ctx, &tombstones, client.InNamespace(b.Namespace), client.MatchingLabels{limbov1alpha1.LabelBundle: b.Name}); {
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		// The kind is not served. Its CRD gone or going (limbo being
		// uninstalled, the Tombstones' CRD deleted before the teardowns end),
		// so are the Tombstones: failed, the teardown would hold its Bundle,
		// and the Bundle CRD's deletion, for good. Else a moment's 404 (an
		// API server just started): retried.
		if gone, goneErr := uninstall.Gone(ctx, r.APIReader, uninstall.TombstonesCRD); goneErr != nil || !gone {
			return err
		}
		return nil
	case err != nil:
		return err
	}
	for i := range tombstones.Items {
		if err := r.Engine.CancelTombstone(ctx, b, &tombstones.Items[i], "the Bundle is being deleted"); err != nil {
			return err
		}
	}
	return nil
}

// pluginTeardowns is what the plugin teardowns of one pass left.
type pluginTeardowns struct {
	// resources are the plugin resources that have a teardown.
	resources map[string]bool
	// remaining are those still in progress, for ContentRemaining; failures their
	// errors and the warnings of those that gave up, for DeletionFailure.
	remaining, failures []string
	// pending are their items in limbo, for pendingDeletions.
	pending []limbov1alpha1.PendingDeletion
	// carried is set when some of pending are the last status's entries, a
	// teardown call still running: that status's count of what it did not list
	// stands.
	carried      bool
	requeueAfter time.Duration
}

// tearDownResources names the plugin resources of plan whose plugin has a
// teardown.
func (r *Reconciler) tearDownResources(plan *bundlespec.Plan) map[string]bool {
	out := map[string]bool{}
	if plan == nil {
		return out
	}
	for name, res := range plan.Resources {
		if r.hasTeardown(res.Resource) {
			out[name] = true
		}
	}
	return out
}

// hasTeardown reports whether res is a resource of a plugin with a teardown.
func (r *Reconciler) hasTeardown(res limbov1alpha1.Resource) bool {
	if res.Plugin == nil {
		return false
	}
	p, ok := r.Plugins.Get(res.Plugin.Name)
	if !ok {
		return false
	}
	_, has := p.(plugin.TearDowner)
	return has
}

// teardownsSkipped says, with a Warning event each, what a foreground delete of
// b goes without: the plugin teardowns (deorbit's), and the delays of objects,
// b's own that the garbage collector deletes at once (one event, naming
// them, and a log line each for the audit trail). A cleanup or a countdown
// must not be skipped without a word: Argo CD deletes and prunes in foreground
// by default.
func (r *Reconciler) teardownsSkipped(ctx context.Context, b *limbov1alpha1.Bundle, objects []*unstructured.Unstructured) {
	for _, res := range b.Spec.Resources {
		if r.hasTeardown(res) {
			r.Recorder.Eventf(b, corev1.EventTypeWarning, limbov1alpha1.EventTeardownSkipped,
				"plugin resource %s (%s): its teardown did not run: the Bundle was deleted with --cascade=foreground, which deletes everything at once; delete with --cascade=background (kubectl's default) to run it", res.Name, res.Plugin.Name)
		}
	}
	var delayed []*unstructured.Unstructured
	for _, o := range objects {
		// One the garbage collector is deleting for this delete counts (a
		// Deployment waiting for its ReplicaSets is a while at it); one
		// whose deletion began before the Bundle's is not this delete's doing.
		deleting := o.GetDeletionTimestamp()
		if _, has := o.GetAnnotations()[limbov1alpha1.AnnotationDeletionDelay]; has && (deleting == nil || !deleting.Before(b.DeletionTimestamp)) {
			delayed = append(delayed, o)
			log.FromContext(ctx).Info("deleted at once by the garbage collector, its deletionDelay skipped: the Bundle was deleted with --cascade=foreground",
				"object", objectKey(o), "deletionDelay", o.GetAnnotations()[limbov1alpha1.AnnotationDeletionDelay])
		}
	}
	if len(delayed) > 0 {
		r.Recorder.Eventf(b, corev1.EventTypeWarning, limbov1alpha1.EventTeardownSkipped,
			"the deletionDelay of %d objects did not run: the Bundle was deleted with --cascade=foreground, and the garbage collector deletes them at once (%s); delete with --cascade=background (kubectl's default) to keep them for their delays",
			len(delayed), bundlespec.JoinBounded(describeObjects(delayed), ", "))
	}
}

// invalidSpecHolds is what a teardown of b, whose spec is invalid (no plan;
// specErrs say why), leaves of its plugin teardowns: none can run (the invalid part may be its own
// spec), and each resource that would have one holds the Bundle, saying so, until
// the spec is fixed or the resource removed. Deleting a Bundle must not skip a
// cleanup (deorbit's) without a word.
func (r *Reconciler) invalidSpecHolds(b *limbov1alpha1.Bundle, specErrs bundlespec.Errors, out pluginTeardowns) pluginTeardowns {
	for _, res := range b.Spec.Resources {
		if r.hasTeardown(res) {
			out.remaining = append(out.remaining, fmt.Sprintf("plugin resource %s (its teardown cannot run while the Bundle's spec is invalid: fix the spec, or remove the resource to go without it)", res.Name))
		}
	}
	if msgs := specErrs.Messages(); len(out.remaining) > 0 && len(msgs) > 0 {
		// One failure each, so that the DeletionFailure message bounds them.
		out.failures = append(out.failures, "the Bundle's spec is invalid: "+msgs[0])
		out.failures = append(out.failures, msgs[1:]...)
	}
	return out
}

// teardownPlugins runs one pass of the teardown of every plugin resource that has
// one: the plugin's items go through the engine (stamped with the resource's
// deletionDelay, deleted at the deadline), its events are emitted and its state is
// kept on the Bundle. A Teardown call runs beside the passes (r.teardowns): while
// one is still running, its resource remains and shows the items it left before.
// Without a plan (specErrs say why the spec is invalid), see invalidSpecHolds.
func (r *Reconciler) teardownPlugins(ctx context.Context, b *limbov1alpha1.Bundle, plan *bundlespec.Plan, specErrs bundlespec.Errors) pluginTeardowns {
	out := pluginTeardowns{resources: r.tearDownResources(plan), requeueAfter: teardownInterval}
	if plan == nil {
		return r.invalidSpecHolds(b, specErrs, out)
	}
	if len(out.resources) == 0 {
		return out
	}
	// The state each teardown resumes from, and whether it is done, as the
	// last pass kept them: read from the API server, as the cache may show the
	// Bundle from before that write (a lagging watch), and a call resumed from
	// the older state would overwrite the newer one (deorbit: a load-balancer
	// wait lost, the deorbit ended early). One GET per pass of a Bundle with a
	// plugin teardown.
	kept, keptErr := r.readBundleAgain(ctx, b)
	if keptErr == nil && kept.UID != b.UID {
		keptErr = fmt.Errorf("the Bundle was replaced since the cache showed it")
	}
	if keptErr == nil {
		keptErr = r.forgetAnotherBundlesTeardown(ctx, b, kept)
	}
	for _, name := range plan.Order {
		if !out.resources[name] {
			continue
		}
		res := plan.Resources[name]
		p, _ := r.Plugins.Get(res.Plugin.Name)
		var call callOutcome[*plugin.TeardownResult]
		if keptErr != nil { // fails as a call would: the resource remains, named in DeletionFailure
			call = callOutcome[*plugin.TeardownResult]{err: fmt.Errorf("read the state it resumes from: %w", keptErr), current: true}
		} else {
			call = r.teardownPlugin(ctx, b, kept.Annotations, name, res.Plugin.Name, p.(plugin.TearDowner))
		}
		if !call.current {
			out.remaining = append(out.remaining, fmt.Sprintf("plugin resource %s (its teardown call is running)", name))
			out.carried = true
			for _, pd := range b.Status.PendingDeletions {
				if pd.Resource == name {
					out.pending = append(out.pending, pd)
				}
			}
			continue
		}
		result, err := call.result, call.err
		remaining := 0       // the items it hands over that the set counts down
		itemsSettled := true // and every write about them made (a desired item's cancel)
		if result != nil {
			for _, ev := range result.Events {
				r.Recorder.Event(b, ev.Type, ev.Reason, ev.Message)
			}
			if result.Warning != "" {
				out.failures = append(out.failures, fmt.Sprintf("plugin resource %s: %s", name, result.Warning))
			}
			if result.RequeueAfter > 0 {
				out.requeueAfter = min(out.requeueAfter, result.RequeueAfter)
			}
			if len(result.Items) > 0 {
				// A stamp left on the debris of an earlier Bundle of this name (a
				// deorbit that gave up) whose deadline came before the teardown's
				// start does not make the item due at once (NotBefore); one whose
				// deadline is later still shortens the grace (docs/soft-delete.md).
				// The delay runs from the deletion, however late an item is first
				// listed (CountFrom).
				set := softdelete.ItemSet{Owner: softdelete.ItemOwner(client.ObjectKeyFromObject(b), name), Delay: res.Plugin.DeletionDelay, Items: result.Items, Cluster: result.Cluster}
				if b.DeletionTimestamp != nil {
					set.NotBefore, set.CountFrom = b.DeletionTimestamp.Time, b.DeletionTimestamp.Time
				}
				ictx, cancel := context.WithTimeout(ctx, itemsBudget)
				items := r.Engine.ProcessItems(ictx, b, set)
				cancel()
				remaining, itemsSettled = items.Remaining, items.Err == nil && !items.ReadAgain
				for _, pd := range items.Pending {
					pd.Resource = name
					out.pending = append(out.pending, pd)
				}
				if items.Err != nil {
					out.failures = append(out.failures, fmt.Sprintf("plugin resource %s: %v", name, items.Err))
				}
				if !items.WakeAt.IsZero() {
					out.requeueAfter = min(out.requeueAfter, max(items.WakeAt.Sub(r.Clock.Now()), time.Second))
				}
				if items.ReadAgain {
					out.requeueAfter = min(out.requeueAfter, time.Second)
				}
			}
		}
		switch {
		case err != nil:
			out.remaining = append(out.remaining, fmt.Sprintf("plugin resource %s", name))
			out.failures = append(out.failures, fmt.Sprintf("plugin resource %q teardown: %v", name, err))
		case !result.Done:
			out.remaining = append(out.remaining, fmt.Sprintf("plugin resource %s (%s)", name, result.Message))
		case remaining > 0:
			// Done while still handing over items: not done until they are
			// gone. Those left to another owner are no countdown of its.
			out.remaining = append(out.remaining, fmt.Sprintf("plugin resource %s (%s; waiting for its %d item(s) to be deleted)", name, result.Message, remaining))
		case len(result.Items) > 0 && itemsSettled:
			// Done, and none of its items is left to count down: marked done
			// now, so that the next passes do not resolve its spec again (its
			// references may name what the waves delete). Not while a write
			// about them failed (a desired item's cancel): marked, nothing
			// would try it again.
			if err := r.keepTeardown(ctx, b, teardownDoneMarks(name, result.Warning)); err != nil {
				out.remaining = append(out.remaining, fmt.Sprintf("plugin resource %s", name))
				out.failures = append(out.failures, fmt.Sprintf("plugin resource %q teardown: mark it done: %v", name, err))
			}
		}
	}
	return out
}

// forgetAnotherBundlesTeardown removes from kept, b as the API server has it,
// the teardown annotations another Bundle's teardown wrote
// (AnnotationTeardownOf names it): b is a copy of that Bundle taken during its
// teardown (a backup restored), and read as b's, its done marks skipped b's
// plugin teardowns (deorbit: a workload cluster's volumes and load balancers
// left behind) and its states resumed them from the other's. One write,
// guarded by kept's resourceVersion; kept then holds the answer.
func (r *Reconciler) forgetAnotherBundlesTeardown(ctx context.Context, b *limbov1alpha1.Bundle, kept *metav1.PartialObjectMetadata) error {
	of, ok := kept.Annotations[limbov1alpha1.AnnotationTeardownOf]
	if !ok || of == string(b.UID) {
		return nil
	}
	annotations := map[string]any{limbov1alpha1.AnnotationTeardownOf: string(b.UID)}
	for k := range kept.Annotations {
		for _, prefix := range []string{limbov1alpha1.AnnotationTeardownStatePrefix, limbov1alpha1.AnnotationTeardownDonePrefix, limbov1alpha1.AnnotationTeardownWarningPrefix} {
			if strings.HasPrefix(k, prefix) {
				annotations[k] = nil
			}
		}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations, "resourceVersion": kept.ResourceVersion}})
	if err == nil {
		err = r.Client.Patch(ctx, kept, client.RawPatch(types.MergePatchType, patch))
	}
	if err != nil {
		return fmt.Errorf("remove the teardown marks of Bundle %s, of which this one is a copy: %w", of, err)
	}
	log.FromContext(ctx).Info("removed the teardown marks of the Bundle this one is a copy of", "of", of)
	return nil
}

// teardownDoneMarks are the annotations that mark the teardown of plugin
// resource name done, with the warning it ended with; TeardownEnded reads
// them.
func teardownDoneMarks(name, warning string) map[string]any {
	marks := map[string]any{limbov1alpha1.AnnotationTeardownDonePrefix + name: "true"}
	if warning != "" {
		marks[limbov1alpha1.AnnotationTeardownWarningPrefix+name] = bundlespec.Bound(warning)
	}
	return marks
}

// keepTeardown writes annotations, a plugin teardown's state or done marks, on
// b, with the mark that they are b's (AnnotationTeardownOf).
func (r *Reconciler) keepTeardown(ctx context.Context, b *limbov1alpha1.Bundle, annotations map[string]any) error {
	annotations[limbov1alpha1.AnnotationTeardownOf] = string(b.UID)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return err
	}
	return r.Client.Patch(ctx, b, client.RawPatch(types.MergePatchType, patch))
}

// maxTeardownState is the largest teardown state a plugin may keep on its
// Bundle (an annotation): the API server takes 256 KiB of a Bundle's
// annotations in all, its last-applied-configuration among them.
const maxTeardownState = 32 << 10

// teardownPlugin runs one Teardown call of the plugin resource name, beside the
// pass, and keeps the state a finished call returned on the Bundle. kept are the
// Bundle's annotations as the API server has them (the state and done marks
// the last pass kept). The outcome is current when there is a finished call to
// act on.
func (r *Reconciler) teardownPlugin(ctx context.Context, b *limbov1alpha1.Bundle, kept map[string]string, name, pluginName string, tearDowner plugin.TearDowner) callOutcome[*plugin.TeardownResult] {
	if warning, ended := limbov1alpha1.TeardownEnded(kept, name); ended {
		// Done: its spec's references may name objects the waves have deleted
		// since, and a spec that no longer resolves must not hold the Bundle.
		// The warning the teardown ended with (a deorbit that gave up, naming
		// the debris) is kept beside the mark: DeletionFailure shows it for the
		// rest of the teardown, not only in the pass it ended.
		result := &plugin.TeardownResult{Done: true, Message: "done", Warning: warning}
		return callOutcome[*plugin.TeardownResult]{result: result, current: true}
	}
	spec, err := plugin.ResolveSpecFromStatus(ctx, r.APIReader, b, name)
	if err != nil {
		return callOutcome[*plugin.TeardownResult]{err: fmt.Errorf("spec: %w", err), current: true}
	}
	// As a pass does: the values the references read are checked before the
	// plugin sees them. A deorbit whose kubeConfigSecretRef resolved to null
	// was never armed (every pass refused it), and read as absent it would
	// have torn down limbo's own cluster.
	if err := r.Plugins.ValidateSpec(pluginName, &apiextensionsv1.JSON{Raw: spec}, nil); err != nil {
		return callOutcome[*plugin.TeardownResult]{err: fmt.Errorf("spec, with its references resolved: %w", err), current: true}
	}
	secrets, err := impersonation.SecretReader(ctx, r.Client, r.APIReader)
	if err != nil {
		return callOutcome[*plugin.TeardownResult]{err: err, current: true}
	}
	key := limbov1alpha1.AnnotationTeardownStatePrefix + name
	req := plugin.Request{Bundle: b, Resource: name, Spec: spec, Client: r.pluginClient(), Reader: r.APIReader, Secrets: secrets, Now: r.Clock.Now(), TeardownState: kept[key]}
	// The call's input is the spec and the state it resumes from: a result is
	// acted on once, and the next call starts from the state it left.
	input := callInput([]byte(pluginName), spec, []byte(req.TeardownState))
	out := r.teardowns.call(ctx, b, name, input, func(ctx context.Context, b *limbov1alpha1.Bundle) (*plugin.TeardownResult, error) {
		req := req
		req.Bundle = b
		return tearDowner.Teardown(ctx, req)
	})
	if !out.current {
		return out
	}
	if out.result == nil {
		if out.err == nil {
			out.err = errors.New("the plugin returned no result")
		}
		return out
	}
	if n := len(out.result.State); n > maxTeardownState {
		// Written, the API server refused the Bundle's annotations as too
		// large at every pass, for good: the plugin's error, not acted on.
		return callOutcome[*plugin.TeardownResult]{err: errors.Join(out.err, fmt.Errorf("the plugin's teardown state is %d bytes, more than the %d a Bundle keeps (the pass is not acted on and is retried)", n, maxTeardownState)), current: true}
	}
	state := map[string]any{}
	if out.result.State != req.TeardownState {
		state[key] = out.result.State
	}
	// Done while still handing over items, it is marked done only once none
	// is left to count down (teardownPlugins): marked at once, the teardown was
	// never called again, nothing listed the items again, and they stayed
	// stamped, never deleted.
	if out.result.Done && len(out.result.Items) == 0 {
		maps.Copy(state, teardownDoneMarks(name, out.result.Warning))
	}
	if len(state) > 0 {
		if err := r.keepTeardown(ctx, b, state); err != nil {
			// Not kept, the result is not acted on: its items, events and end
			// are the next call's, from the state before it (deorbit: a
			// load-balancer wait lost would end the deorbit early).
			return callOutcome[*plugin.TeardownResult]{err: errors.Join(out.err, fmt.Errorf("keep the teardown state (the pass is not acted on and is retried): %w", err)), current: true}
		}
	}
	return out
}

// describeObjects names objects for the ContentRemaining message; an object being
// deleted is named with its finalizers, which are what it waits for: a Bundle
// Terminating for long then says whose work it waits for (a controller that is
// gone, a volume still attached), as the namespace controller's
// NamespaceFinalizersRemaining does.
func describeObjects(objects []*unstructured.Unstructured) []string {
	names := make([]string, len(objects))
	for i, o := range objects {
		names[i] = fmt.Sprintf("%s %s", o.GetKind(), o.GetName())
		if finalizers := o.GetFinalizers(); o.GetDeletionTimestamp() != nil && len(finalizers) > 0 {
			names[i] += " (held by finalizers: " + strings.Join(finalizers, ", ") + ")"
		}
	}
	return names
}

// teardownStatus writes the teardown's conditions, naming what remains (names) and
// what failed, and the plugin teardowns' items in pendingDeletions, and records the
// status in the Bundle's metrics (see heldObjects for what it counts in limbo).
// Both messages are bounded (bundlespec.JoinBounded): a wave of thousands of
// objects would make a condition message the API refuses, and every status write
// with it.
func (r *Reconciler) teardownStatus(ctx context.Context, b *limbov1alpha1.Bundle, names []string, failures []string, plugins pluginTeardowns, held heldObjects) error {
	st := *b.Status.DeepCopy()
	pending := plugins.pending
	for _, pd := range st.PendingDeletions {
		if !plugins.resources[pd.Resource] {
			pending = append(pending, pd)
		}
	}
	setPending(&st, pending)
	if prev := &b.Status; plugins.carried && prev.PendingDeletionsCut() {
		// What the last status did not list is still there as far as is known.
		st.PendingDeletionCount = max(st.PendingDeletionCount, prev.PendingDeletionCount)
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: limbov1alpha1.ConditionContentRemaining, Status: metav1.ConditionTrue,
		Reason: limbov1alpha1.ReasonSomeResourcesRemain, Message: "waiting for " + bundlespec.JoinBounded(names, ", ") + " to be deleted", ObservedGeneration: b.Generation})
	failure := metav1.Condition{Type: limbov1alpha1.ConditionDeletionFailure, Status: metav1.ConditionFalse, Reason: limbov1alpha1.ReasonAsExpected, ObservedGeneration: b.Generation}
	if len(failures) > 0 {
		failure.Status, failure.Reason, failure.Message = metav1.ConditionTrue, limbov1alpha1.ReasonDeleteFailed, bundlespec.JoinBounded(failures, "; ")
	}
	meta.SetStatusCondition(&st.Conditions, failure)
	inLimbo := 0
	for _, pd := range pending {
		if plugins.resources[pd.Resource] || held.holds(b, pd) {
			inLimbo++
		}
	}
	r.recordStatus(client.ObjectKeyFromObject(b).String(), st, inLimbo)
	return r.writeStatus(ctx, b, st)
}

// teardownFailed reports err, the error a teardown pass of b returned before it
// wrote its status (a listing refused: RBAC narrowed, an aggregated API down),
// in DeletionFailure, and in a Warning event when the condition did not say it
// already: the Bundle stayed Terminating with neither, the cause in the log
// only. A Conflict or a NotFound is the next pass's to decide, and a status
// write that fails is the log's (the pass's error goes back to the work queue
// all the same).
func (r *Reconciler) teardownFailed(ctx context.Context, b *limbov1alpha1.Bundle, err error) {
	if err == nil || apiconflict.Is(err) || apierrors.IsNotFound(err) || ctx.Err() != nil {
		return
	}
	msg := bundlespec.JoinBounded([]string{"the teardown pass failed, retried: " + err.Error()}, "")
	if c := meta.FindStatusCondition(b.Status.Conditions, limbov1alpha1.ConditionDeletionFailure); c != nil &&
		c.Status == metav1.ConditionTrue && c.Reason == limbov1alpha1.ReasonTeardownFailed && c.Message == msg {
		return
	}
	st := *b.Status.DeepCopy()
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: limbov1alpha1.ConditionDeletionFailure, Status: metav1.ConditionTrue,
		Reason: limbov1alpha1.ReasonTeardownFailed, Message: msg, ObservedGeneration: b.Generation})
	r.Recorder.Event(b, corev1.EventTypeWarning, limbov1alpha1.ReasonTeardownFailed, msg)
	if werr := r.writeStatus(ctx, b, st); werr != nil {
		log.FromContext(ctx).Error(werr, "write the status of a failed teardown pass")
	}
}

// heldObjects are, by objectKey, the objects of a Bundle being torn down that it
// still controls. Of the entries its status carries over from its passes, only
// theirs are still the Bundle's in limbo: an object the teardown released is the
// reaper's, which counts it (limbo_pending_deletions would count it twice), and
// the Tombstones and plugin object items the teardown cancelled are out of limbo
// (the status lists them all until the Bundle is gone). The plugin teardowns'
// items are theirs (pluginTeardowns).
type heldObjects map[string]bool

// heldBy is the heldObjects of objects, which the Bundle controls.
func heldBy(objects []*unstructured.Unstructured) heldObjects {
	held := heldObjects{}
	for _, o := range objects {
		held[objectKey(o)] = true
	}
	return held
}

// holds reports whether pd, an entry of b's status, is still b's in limbo: an
// object b still controls, or an item of another cluster, which only its
// plugin's teardown decides.
func (h heldObjects) holds(b *limbov1alpha1.Bundle, pd limbov1alpha1.PendingDeletion) bool {
	if pd.Cluster != "" {
		return true
	}
	gk := schema.FromAPIVersionAndKind(pd.APIVersion, pd.Kind).GroupKind()
	return pd.Namespace == b.Namespace && h[bundlespec.ObjectKey(gk, pd.Name)]
}

// removeFinalizer lets b go, after a last look at its Tombstones as the API
// server lists them (cancelTombstones). Its metrics are forgotten: nothing of
// it is in limbo any more (whatever another finalizer keeps it for), as when
// it is gone.
func (r *Reconciler) removeFinalizer(ctx context.Context, b *limbov1alpha1.Bundle) error {
	if err := r.cancelTombstones(ctx, b, r.APIReader); err != nil {
		return err
	}
	orig := b.DeepCopy()
	controllerutil.RemoveFinalizer(b, limbov1alpha1.FinalizerTeardown)
	// Marked as limbo's: the admission policy puts back a teardown finalizer
	// that another write removes (crds/admission-bundle-teardown-finalizer.yaml).
	metav1.SetMetaDataAnnotation(&b.ObjectMeta, limbov1alpha1.AnnotationTornDown, string(b.UID))
	if err := r.Client.Patch(ctx, b, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
		return err
	}
	r.forgetStatus(client.ObjectKeyFromObject(b).String())
	return nil
}
