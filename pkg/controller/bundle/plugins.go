package bundle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/reference"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// Reasons of plugin resources.
const (
	ReasonPluginFailed    = "PluginFailed"
	ReasonUnsafeInventory = "UnsafeInventory"
)

// pluginOutcome is a plugin resource's inventory, processed with the orphans.
type pluginOutcome struct {
	res       *bundlespec.Resource
	inventory *plugin.Inventory
	// ok: the plan succeeded, so the inventory is the truth about the domain.
	ok bool
	// plugin and req ran the plan; the gate of object items asks them again.
	plugin plugin.Plugin
	req    plugin.Request
}

// syncPlugin runs a plugin resource: plan, apply its generated objects like object
// resources, and keep its inventory for the orphan step.
func (p *pass) syncPlugin(ctx context.Context, res *bundlespec.Resource) limbov1alpha1.ResourceStatus {
	st := limbov1alpha1.ResourceStatus{Name: res.Name}
	fail := func(state limbov1alpha1.ResourceState, reason, format string, args ...any) limbov1alpha1.ResourceStatus {
		st.State, st.Reason, st.Message = state, reason, fmt.Sprintf(format, args...)
		p.plugins = append(p.plugins, pluginOutcome{res: res})
		return st
	}
	plug, ok := p.r.Plugins.Get(res.Plugin.Name)
	if !ok {
		return fail(limbov1alpha1.ResourceError, bundlespec.ReasonUnknownPlugin, "unknown plugin %q", res.Plugin.Name)
	}
	if waiting := p.unreadyDependencies(res.Name); len(waiting) > 0 {
		return fail(limbov1alpha1.ResourceBlocked, ReasonDependenciesNotReady, "%s", blockedMessage(waiting))
	}
	spec, err := p.pluginSpec(res)
	if err != nil {
		return fail(limbov1alpha1.ResourceError, ReasonReferenceError, "%v", err)
	}
	req := plugin.Request{Bundle: p.bundle, Resource: res.Name, Spec: spec, Client: p.r.Client, Reader: p.r.APIReader, Now: p.r.Clock.Now()}
	result, err := plugin.WithTimeout(ctx, func(ctx context.Context) (*plugin.Result, error) { return plug.Plan(ctx, req) })
	desc := plug.Describe()
	poll := desc.DefaultPollInterval
	if result != nil && result.PollAfter > 0 {
		poll = result.PollAfter
	}
	if poll > 0 {
		p.after(poll)
	}
	if err != nil {
		p.after(retryInterval)
		return fail(limbov1alpha1.ResourceError, ReasonPluginFailed, "plugin %q: %v", res.Plugin.Name, err)
	}
	for _, ev := range result.Events {
		p.r.Recorder.Event(p.bundle, ev.Type, ev.Reason, ev.Message)
	}
	if _, _, err := result.Inventory.Orphans(); err != nil {
		return fail(limbov1alpha1.ResourceError, ReasonUnsafeInventory, "plugin %q: %v", res.Plugin.Name, err)
	}
	p.plugins = append(p.plugins, pluginOutcome{res: res, inventory: result.Inventory, ok: true, plugin: plug, req: req})
	st.State, st.Message = limbov1alpha1.ResourceReady, result.Message
	if !result.Ready {
		st.State, st.Reason = limbov1alpha1.ResourceInProgress, "PluginNotReady"
	}
	for _, obj := range result.Objects {
		if obj.GetNamespace() == "" {
			obj.SetNamespace(p.bundle.Namespace)
		}
		if obj.GetNamespace() != p.bundle.Namespace {
			return fail(limbov1alpha1.ResourceError, ReasonPluginFailed, "plugin %q generated %s %q in namespace %q; a Bundle's objects live in its own namespace", res.Plugin.Name, obj.GetKind(), obj.GetName(), obj.GetNamespace())
		}
		if _, set := obj.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp]; set {
			return fail(limbov1alpha1.ResourceError, bundlespec.ReasonProhibitedAnnotation, "plugin %q generated %s %q with annotation %q, which only the controller sets", res.Plugin.Name, obj.GetKind(), obj.GetName(), limbov1alpha1.AnnotationDeletionTimestamp)
		}
		objSt, live := p.syncOne(ctx, res.Name, obj, false, nil, func() (*unstructured.Unstructured, error) { return p.own(obj.DeepCopy()) })
		if live != nil && p.live[res.Name] == nil {
			p.live[res.Name] = live // references to a generator read its first object
		}
		if st.Object == nil {
			st.Object = objSt.Object
		}
		if objSt.State != limbov1alpha1.ResourceReady {
			st.State, st.Reason, st.Message = objSt.State, objSt.Reason, objSt.Message
		}
	}
	return st
}

// pluginSpec is the plugin resource's spec with references resolved, as JSON.
func (p *pass) pluginSpec(res *bundlespec.Resource) ([]byte, error) {
	if res.Plugin.Spec == nil || len(res.Plugin.Spec.Raw) == 0 {
		return []byte("{}"), nil
	}
	var value any
	if err := json.Unmarshal(res.Plugin.Spec.Raw, &value); err != nil {
		return nil, err
	}
	content, err := p.resolve(res.References, map[string]any{"spec": value})
	if err != nil {
		return nil, err
	}
	return json.Marshal(content["spec"])
}

// processPlugins takes plugin items out of limbo when they are desired again, and
// hands orphans to the engine when deletions are allowed (ready). Tombstones of
// items that are no longer orphans, or of resources that are gone, are cancelled.
func (p *pass) processPlugins(ctx context.Context, ready bool) {
	var tombstones limbov1alpha1.TombstoneList
	if err := p.r.Client.List(ctx, &tombstones, client.InNamespace(p.bundle.Namespace), client.MatchingLabels{limbov1alpha1.LabelBundle: p.bundle.Name}); err != nil {
		p.after(retryInterval)
		return
	}
	existing := map[string]*limbov1alpha1.Tombstone{}
	for i := range tombstones.Items {
		existing[tombstones.Items[i].Name] = &tombstones.Items[i]
	}
	// A Tombstone is cancelled only when its item is desired again or its plugin
	// resource left the Bundle. An item a plugin did not judge in this run (absent
	// from its inventory, or its plan failed) keeps its countdown: if the item
	// vanished meanwhile, the Tombstone's delete finds it gone, which is success.
	desiredItems := map[string]bool{}
	for _, out := range p.plugins {
		if !out.ok {
			continue
		}
		p.processObjectItems(ctx, out, ready)
		_, desiredExternal := out.inventory.Desired()
		for _, item := range desiredExternal {
			desiredItems[softdelete.TombstoneName(out.res.Name, item.ExternalItem)] = true
		}
		_, orphanItems, _ := out.inventory.Orphans() // checked in syncPlugin
		if !ready {
			continue
		}
		for _, item := range orphanItems {
			if _, ok := existing[softdelete.TombstoneName(out.res.Name, item.ExternalItem)]; ok {
				continue
			}
			ts, err := p.r.Engine.OrphanExternal(ctx, p.bundle, out.res.Plugin.Name, out.res.Name, out.res.Plugin.DeletionDelay, item.ExternalItem)
			if err != nil {
				p.r.Recorder.Eventf(p.bundle, corev1.EventTypeWarning, ReasonPluginFailed, "%v", err)
				p.after(retryInterval)
				continue
			}
			p.pending = append(p.pending, p.r.Engine.TombstonePending(ts))
		}
	}
	names := make([]string, 0, len(existing))
	for name := range existing {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		ts := existing[name]
		res := p.plan.Resources[ts.Spec.Resource]
		why := ""
		switch {
		case res == nil || res.Plugin == nil || res.Plugin.Name != ts.Spec.Plugin:
			why = fmt.Sprintf("resource %q left the Bundle", ts.Spec.Resource)
		case desiredItems[name]:
			why = "the item is desired again"
		}
		if why == "" || !ts.DeletionTimestamp.IsZero() {
			p.pending = append(p.pending, p.r.Engine.TombstonePending(ts))
			continue
		}
		if err := p.r.Engine.CancelTombstone(ctx, p.bundle, ts, why); err != nil {
			p.after(retryInterval)
			p.pending = append(p.pending, p.r.Engine.TombstonePending(ts))
		}
	}
	p.processUnjudgedItems(ctx)
}

// collect records an engine outcome in the pass's outputs.
func (p *pass) collect(pending *limbov1alpha1.PendingDeletion, requeue bool, after time.Duration, err error) {
	if pending != nil {
		p.pending = append(p.pending, *pending)
	}
	if requeue {
		p.after(after)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		p.after(retryInterval)
	}
}

// ResolvePluginSpec returns the spec of b's plugin resource named resource with its
// references resolved, outside a pass: from the live objects that b's status
// records for the referenced resources. The Tombstone controller and the teardown
// call plugins with it, so that they see the spec the plan saw.
func ResolvePluginSpec(ctx context.Context, c client.Reader, b *limbov1alpha1.Bundle, resource string) ([]byte, error) {
	var res *limbov1alpha1.Resource
	for i := range b.Spec.Resources {
		if b.Spec.Resources[i].Name == resource && b.Spec.Resources[i].Plugin != nil {
			res = &b.Spec.Resources[i]
		}
	}
	if res == nil {
		return nil, fmt.Errorf("the Bundle has no plugin resource %q", resource)
	}
	if res.Plugin.Spec == nil || len(res.Plugin.Spec.Raw) == 0 {
		return []byte("{}"), nil
	}
	if len(res.References) == 0 {
		return res.Plugin.Spec.Raw, nil
	}
	sources := map[string]reference.Source{}
	for _, ref := range res.References {
		for _, st := range b.Status.Resources {
			if st.Name != ref.Resource || st.Object == nil {
				continue
			}
			u := &unstructured.Unstructured{}
			u.SetAPIVersion(st.Object.APIVersion)
			u.SetKind(st.Object.Kind)
			if err := c.Get(ctx, client.ObjectKey{Namespace: st.Object.Namespace, Name: st.Object.Name}, u); err != nil {
				return nil, fmt.Errorf("resource %q: %w", ref.Resource, err)
			}
			sources[ref.Resource] = reference.Source{Object: u.Object}
		}
	}
	var value any
	if err := json.Unmarshal(res.Plugin.Spec.Raw, &value); err != nil {
		return nil, err
	}
	values, err := reference.Resolve(res.References, sources, false)
	if err != nil {
		return nil, err
	}
	content, err := reference.Substitute(map[string]any{"spec": value}, values)
	if err != nil {
		return nil, err
	}
	return json.Marshal(content["spec"])
}
