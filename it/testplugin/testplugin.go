// Package testplugin is a plugin for the integration tests: its domain is an
// in-memory set of external items that tests create, mark desired or not, and make
// fail, so that the Tombstone path (schedule, force, cancel, retry) is exercised
// without a real external system. Its twin TearingDown (TeardownName) has a
// teardown too, which tests can hold like a plan.
package testplugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
)

// Name is the plugin's registered name; TeardownName its twin's, which has a
// teardown; ItemKind their items' kind.
const (
	Name         = "test-external"
	TeardownName = "test-teardown"
	ItemKind     = "TestItem"
)

// Call is a kind of plugin call that a test can hold.
type Call int

// The calls a domain can hold.
const (
	PlanCall Call = iota
	TeardownCall
	DeleteCall
)

// Plugin keeps items per domain; a Bundle resource names its domain in its spec
// ({"domain": "..."}) so that tests do not see each other's items.
type Plugin struct {
	mu      sync.Mutex
	domains map[string]*Domain
	// forgotten are the Bundles the controller said are gone (plugin.Forgetter).
	forgotten map[types.UID]bool
}

// Domain is one test's set of items.
type Domain struct {
	mu      sync.Mutex
	items   map[string]bool              // id -> desired
	deletes map[string]int               // id -> delete calls
	failing error                        // returned by deletes while set
	planErr error                        // returned by Plan while set
	nilPlan bool                         // Plan returns neither a result nor an error
	objects []*unstructured.Unstructured // generated objects
	// countConfigMaps, while set, has Plan list the ConfigMaps of the Bundle's
	// namespace through Request.Client and say how many it saw.
	countConfigMaps bool
	// gates, while set, hold every call of their kind until they are closed or
	// the call's context ends (the plugin timeout): a hanging domain.
	gates map[Call]chan struct{}
	// waiting maps each call held now to its kind and the time it began to wait.
	waiting map[int]heldCall
	calls   int
	// planCalls and deleteCalls (by item) are when each call ran (once let
	// through, if held): counts alone cannot tell a delete at its deadline
	// from one before it, nor retries with backoff from retries at once.
	planCalls   []time.Time
	deleteCalls map[string][]time.Time
}

type heldCall struct {
	call  Call
	since time.Time
}

// New returns the plugin.
func New() *Plugin { return &Plugin{domains: map[string]*Domain{}, forgotten: map[types.UID]bool{}} }

// ForgetBundle records that the Bundle whose UID is uid is gone.
func (p *Plugin) ForgetBundle(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.forgotten[uid] = true
}

// Forgotten reports whether the controller said the Bundle whose UID is uid is gone.
func (p *Plugin) Forgotten(uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.forgotten[uid]
}

// Domain returns the domain called name, creating it.
func (p *Plugin) Domain(name string) *Domain {
	p.mu.Lock()
	defer p.mu.Unlock()
	d, ok := p.domains[name]
	if !ok {
		d = &Domain{items: map[string]bool{}, deletes: map[string]int{}, deleteCalls: map[string][]time.Time{}}
		p.domains[name] = d
	}
	return d
}

// Set creates or updates an item.
func (d *Domain) Set(id string, desired bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.items[id] = desired
}

// Exists reports whether the item still exists.
func (d *Domain) Exists(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.items[id]
	return ok
}

// Deletes counts the delete calls for an item.
func (d *Domain) Deletes(id string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.deletes[id]
}

// DeleteCalls are the times of the delete calls for an item, whatever their
// outcome, oldest first.
func (d *Domain) DeleteCalls(id string) []time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.deleteCalls[id])
}

// PlanCalls are the times of the domain's Plan calls, whatever their outcome,
// oldest first.
func (d *Domain) PlanCalls() []time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.planCalls)
}

// FailDeletes makes deletes fail with err (nil: succeed).
func (d *Domain) FailDeletes(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.failing = err
}

// FailPlan makes Plan fail with err (nil: succeed), like an outage of the domain.
func (d *Domain) FailPlan(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.planErr = err
}

// ReturnNothing makes Plan return a nil result and a nil error, as a buggy plugin
// might.
func (d *Domain) ReturnNothing(on bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.nilPlan = on
}

// Generate sets the objects Plan generates.
func (d *Domain) Generate(objects ...*unstructured.Unstructured) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.objects = objects
}

// CountConfigMaps has Plan list the ConfigMaps of the Bundle's namespace through
// Request.Client and end its message with "; N ConfigMaps listed".
func (d *Domain) CountConfigMaps(on bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.countConfigMaps = on
}

// Block makes every call of kind c hang from now on until Unblock, or until its
// context ends (the plugin call timeout); a hanging call returns the context's
// error.
func (d *Domain) Block(c Call) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.gates == nil {
		d.gates = map[Call]chan struct{}{}
	}
	if d.gates[c] == nil {
		d.gates[c] = make(chan struct{})
	}
}

// Unblock lets the held calls of kind c go on, and the next ones run at once.
func (d *Domain) Unblock(c Call) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if gate := d.gates[c]; gate != nil {
		close(gate)
		delete(d.gates, c)
	}
}

// BlockedSince is when the longest-held call of kind c held now began to wait,
// and how many are held; zero when none is.
func (d *Domain) BlockedSince(c Call) (since time.Time, held int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, w := range d.waiting {
		if w.call != c {
			continue
		}
		held++
		if since.IsZero() || w.since.Before(since) {
			since = w.since
		}
	}
	return since, held
}

// hold waits while the domain's calls of kind c are blocked.
func (d *Domain) hold(ctx context.Context, c Call) error {
	d.mu.Lock()
	gate := d.gates[c]
	if gate == nil {
		d.mu.Unlock()
		return nil
	}
	if d.waiting == nil {
		d.waiting = map[int]heldCall{}
	}
	d.calls++
	call := d.calls
	d.waiting[call] = heldCall{call: c, since: time.Now()}
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		delete(d.waiting, call)
		d.mu.Unlock()
	}()
	select {
	case <-gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Describe names the plugin.
func (p *Plugin) Describe() plugin.Description {
	signal := &metav1.PartialObjectMetadata{}
	signal.SetGroupVersionKind(SignalKind)
	return plugin.Description{Name: Name, Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object", Required: []string{"domain"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{"domain": {Type: "string"}},
	}, Watches: []client.Object{signal}}
}

// SignalKind is a kind the plugin watches (metadata only) whose CRD no test
// environment installs: a test installs it while the controller runs, and an
// object of it then runs the plugin's Bundles again.
var SignalKind = schema.GroupVersionKind{Group: "late.test.limbo.dev", Version: "v1", Kind: "Signal"}

func (p *Plugin) domainOf(spec []byte) (*Domain, error) {
	var s struct {
		Domain string `json:"domain"`
	}
	if err := json.Unmarshal(spec, &s); err != nil || s.Domain == "" {
		return nil, fmt.Errorf("spec.domain: %v", err)
	}
	return p.Domain(s.Domain), nil
}

// Plan lists the domain's items.
func (p *Plugin) Plan(ctx context.Context, req plugin.Request) (*plugin.Result, error) {
	d, err := p.domainOf(req.Spec)
	if err != nil {
		return nil, err
	}
	if err := d.hold(ctx, PlanCall); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.planCalls = append(d.planCalls, time.Now())
	if d.planErr != nil {
		return nil, d.planErr
	}
	if d.nilPlan {
		return nil, nil
	}
	ids := make([]string, 0, len(d.items))
	for id := range d.items {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	inv := &plugin.Inventory{EmptyDesiredIsValid: true}
	for _, id := range ids {
		inv.External = append(inv.External, plugin.ExternalItem{
			ExternalItem: limbov1alpha1.ExternalItem{Kind: ItemKind, ID: id, Name: id}, Desired: d.items[id]})
	}
	result := &plugin.Result{Inventory: inv, Ready: true, Message: fmt.Sprintf("%d items", len(ids))}
	if d.countConfigMaps {
		var cms corev1.ConfigMapList
		if err := req.Client.List(ctx, &cms, client.InNamespace(req.Bundle.Namespace)); err != nil {
			return nil, err
		}
		result.Message += fmt.Sprintf("; %d ConfigMaps listed", len(cms.Items))
	}
	for _, o := range d.objects {
		result.Objects = append(result.Objects, o.DeepCopy())
	}
	return result, nil
}

// DeleteExternal deletes an item once the domain lets it run; a missing item is
// success.
func (p *Plugin) DeleteExternal(ctx context.Context, req plugin.Request, item limbov1alpha1.ExternalItem) error {
	d, err := p.domainOf(req.Spec)
	if err != nil {
		return err
	}
	if err := d.hold(ctx, DeleteCall); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.deletes[item.ID]++
	d.deleteCalls[item.ID] = append(d.deleteCalls[item.ID], time.Now())
	if d.failing != nil {
		return d.failing
	}
	delete(d.items, item.ID)
	return nil
}

// ErrInjected is a convenient failure for tests.
var ErrInjected = errors.New("injected failure")

// TearingDown is the plugin with a teardown: Plan and DeleteExternal are the test
// plugin's, and its Teardown is done at once unless the domain holds it.
type TearingDown struct{ *Plugin }

// NewTearingDown returns the twin of p with a teardown, sharing p's domains.
func NewTearingDown(p *Plugin) TearingDown { return TearingDown{p} }

// Describe names the twin.
func (p TearingDown) Describe() plugin.Description {
	d := p.Plugin.Describe()
	d.Name = TeardownName
	return d
}

// Teardown is done once the domain lets it run.
func (p TearingDown) Teardown(ctx context.Context, req plugin.Request) (*plugin.TeardownResult, error) {
	d, err := p.domainOf(req.Spec)
	if err != nil {
		return nil, err
	}
	if err := d.hold(ctx, TeardownCall); err != nil {
		return nil, err
	}
	return &plugin.TeardownResult{Done: true, Message: "torn down"}, nil
}
