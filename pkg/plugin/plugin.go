package plugin

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/boundedtext"
	"github.com/limbo-dev/limbo/pkg/responselimit"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// Description is what a plugin says of itself.
type Description struct {
	// Name is the registered name, used in `plugin.name`: a DNS-1123 label.
	Name string
	// Schema validates the plugin's spec before anything runs.
	Schema *apiextensionsv1.JSONSchemaProps
	// Watches are prototypes of the kinds whose changes re-run the plugin's
	// Bundles, for example &corev1.Namespace{}; they are cached whole, and a
	// *metav1.PartialObjectMetadata with its apiVersion and kind set caches only
	// metadata (enough for a trigger). A kind the API server does not serve when the
	// controller starts (a CRD not installed) is not watched: the controller starts
	// all the same, and the plugin, which should read such kinds with
	// Request.Reader, reports the missing kind as its error.
	Watches []client.Object
	// DefaultPollInterval re-runs the plugin when nothing else does (external
	// systems); zero means only on events.
	DefaultPollInterval time.Duration
}

// Plugin is a compiled-in plugin.
type Plugin interface {
	Describe() Description
	// Plan computes the plugin's objects and inventory. An error makes the resource
	// Error and computes no orphans.
	Plan(ctx context.Context, req Request) (*Result, error)
}

// SpecChecker is implemented by plugins whose spec has constraints that a JSON
// schema cannot express (a CIDR, a positive duration, a label selector).
// Registry.ValidateSpec calls CheckSpec once the spec passes the schema, so that
// a spec the plugin cannot use is a spec error (InvalidPluginSpec: the Bundle
// Stalled, nothing run) rather than the plugin's error on every plan. Implement
// it with the very parse Plan uses, so that the check and the plan cannot
// disagree. raw is the spec as JSON ("{}" when it has none). Return a
// *field.Error, or a field.ErrorList's aggregate, to name the field
// (spec.clusterCIDR); any other error is reported against spec as a whole.
type SpecChecker interface {
	CheckSpec(raw []byte) error
}

// ExternalDeleter is implemented by plugins whose inventory holds external items:
// it deletes one item. An item that is already gone is success (return nil). An
// item that is no longer the plugin's to delete — outside the resource's current
// spec (its scope narrowed since the countdown began), or desired again — is
// refused with an error wrapping ErrNotResponsible: the item is left alone and its
// Tombstone cancelled, also one the user forced.
type ExternalDeleter interface {
	DeleteExternal(ctx context.Context, req Request, item limbov1alpha1.ExternalItem) error
}

// TearDowner is implemented by plugins with work to do when their Bundle is torn
// down, before any other content goes (deorbit). Teardown is called on every pass
// of the teardown until it reports Done, and on the passes after that too (it
// answers from Request.TeardownState without touching anything). An error is
// shown in the Bundle's DeletionFailure condition and retried; a result returned
// with it still has its State kept and its Events emitted.
type TearDowner interface {
	Teardown(ctx context.Context, req Request) (*TeardownResult, error)
}

// TeardownResult is one pass of a plugin's teardown.
type TeardownResult struct {
	// Done reports that the plugin's teardown is over: the Bundle's other content
	// may go.
	Done bool
	// Message says what remains (shown in the ContentRemaining condition) or, when
	// Done, how it ended.
	Message string
	// Warning, when set, is shown in the DeletionFailure condition for the rest of
	// the teardown (a teardown that gave up, leaving debris).
	Warning string
	// Items are the objects to delete, all orphans: the engine stamps them with
	// the resource's plugin.deletionDelay and deletes them at the deadline, with
	// the same preconditions, events and pendingDeletions entries as any object
	// item. Items still there on the next pass are listed again.
	Items []ObjectItem
	// Cluster is the cluster Items live in; nil: this one.
	Cluster *softdelete.Cluster
	// State is kept on the Bundle (annotation teardown.limbo.dev/<resource>) and
	// given back as Request.TeardownState, so that a controller restart resumes
	// where the teardown was.
	State string
	// RequeueAfter asks for the next pass sooner than the teardown's own pace;
	// zero keeps that pace.
	RequeueAfter time.Duration
	// Events are emitted on the Bundle.
	Events []Event
}

// Forgetter is implemented by plugins that keep in-memory state per Bundle
// resource (ResourceStates): ForgetBundle drops the state of a Bundle that is
// gone, by its UID, so that the state of Bundles long deleted does not pile up.
type Forgetter interface {
	ForgetBundle(uid types.UID)
}

// ResourceForgetter is implemented by plugins whose state of one resource is to
// go when that resource goes: ForgetResource drops the state of the resource of
// the Bundle whose UID is uid that left the Bundle's spec, or whose call ended
// after the Bundle or the resource was gone (the call may have stored state
// again).
type ResourceForgetter interface {
	ForgetResource(uid types.UID, resource string)
}

// Request is the input of a plugin call.
type Request struct {
	// Bundle is the Bundle that holds the plugin resource.
	Bundle *limbov1alpha1.Bundle
	// Resource is the plugin resource's name.
	Resource string
	// Spec is the plugin's spec with references resolved, as JSON.
	Spec []byte
	// Client writes, and reads the kinds plugins watch from the controller's
	// cache and every other kind from the API server (RequestClient); Reader
	// reads from the API server directly (fresh reads, whatever the kind).
	Client client.Client
	Reader client.Reader
	// Secrets reads the Secrets the spec names (see ReadSecret), from the API
	// server: as the Bundle's ServiceAccount when its writes impersonate one, so
	// that a tenant names only Secrets it may read. Nil: Reader.
	Secrets client.Reader
	// Now is the time of the call.
	Now time.Time
	// TeardownState is what the resource's last TeardownResult.State said, in a
	// Teardown call.
	TeardownState string
}

// SecretsReader is what reads the Secrets the spec names: Secrets, else Reader.
func (r Request) SecretsReader() client.Reader {
	if r.Secrets != nil {
		return r.Secrets
	}
	return r.Reader
}

// Result is a plugin's plan.
type Result struct {
	// Objects are generated objects to apply, treated like `object` resources.
	Objects []*unstructured.Unstructured
	// Inventory lists the items of the plugin's domain; nil when it has none.
	Inventory *Inventory
	// Ready and Message are the resource's readiness.
	Ready   bool
	Message string
	// PollAfter asks for the next run; zero uses the description's default.
	PollAfter time.Duration
	// Events are emitted on the Bundle (a plugin reports what it notices in its
	// domain, for example a Node removed without being drained). Emit an event once
	// per occurrence, not on every run.
	Events []Event
}

// Event is an event a plugin reports on its Bundle.
type Event struct {
	// Type is corev1.EventTypeNormal or corev1.EventTypeWarning.
	Type    string
	Reason  string
	Message string
}

// Inventory is what exists in a plugin's domain and whether it should.
type Inventory struct {
	// Objects are Kubernetes objects of the domain.
	Objects []ObjectItem
	// External are items outside Kubernetes.
	External []ExternalItem
	// DesiredListed is how many items the plugin's listing of the *desired* side
	// returned (the Kubernetes Namespaces, the Nodes, the servers): the safety rule
	// reads it. A plugin reports what its listing returned, not how many existing
	// items it judged desired: a healthy listing in which every existing item is
	// stale (every node replaced) still yields orphans.
	DesiredListed int
	// EmptyDesiredIsValid says that an empty desired listing is a real answer
	// (deorbit deletes everything). Otherwise an inventory with orphans and an empty
	// desired listing is refused: an empty listing more likely means a broken one.
	EmptyDesiredIsValid bool
}

// ObjectItem is a Kubernetes object of a plugin's domain that the plugin does not
// own (a csi-baremetal custom resource, a PVC), with the plugin's judgement and
// how to delete it. See softdelete.Item and docs/plugins/writing-a-plugin.md,
// "Items that are Kubernetes objects".
type ObjectItem = softdelete.Item

// DeleteGate is implemented by plugins whose object items may have to wait past
// their deadline (a pod still running on a removed node). MayDelete is asked when
// some item of group is due; a non-empty hold keeps the whole group, and is shown
// in the Bundle's pendingDeletions. It is asked on every pass until it allows.
type DeleteGate interface {
	MayDelete(ctx context.Context, req Request, group string) (hold string, err error)
}

// ExternalItem is an item outside Kubernetes.
type ExternalItem struct {
	limbov1alpha1.ExternalItem
	Desired bool
}

// ErrNotResponsible is wrapped by a DeleteExternal error when the item is no
// longer the plugin resource's to delete: outside its current spec, or desired
// again. Retrying cannot succeed, and a forced Tombstone (which the Bundle's pass
// does not cancel) would retry forever: the Tombstone is cancelled instead.
var ErrNotResponsible = errors.New("not this resource's to delete any more")

// ErrEmptyDesired is returned by Orphans when the desired side's listing is empty.
var ErrEmptyDesired = errors.New("refusing to compute orphans: the listing of what should exist is empty, which more likely means it could not be listed")

// ErrItemTooLong is returned by Orphans when an external item's kind, ID or name
// is longer than a Tombstone holds (limbov1alpha1.MaxItemKind, MaxItemID,
// MaxItemName).
var ErrItemTooLong = errors.New("an item's kind, ID or name is longer than a Tombstone holds")

// Orphans returns the existing items that should not exist, enforcing the safety
// rule on the desired side's listing and the bounds of an item's fields. An item
// listed both as desired and not (an object of the same kind, namespace and name,
// an external item of the same Kind and ID) is desired: were it both, its desired
// listing would cancel the countdown its orphan listing starts, on every pass, or
// nothing would stop a delete without a delay.
func (inv *Inventory) Orphans() ([]ObjectItem, []ExternalItem, error) {
	if inv == nil {
		return nil, nil, nil
	}
	var objects []ObjectItem
	for _, o := range inv.ObjectItems() {
		if !o.Desired {
			objects = append(objects, o)
		}
	}
	desired := map[externalItemKey]bool{}
	for _, e := range inv.External {
		if e.Desired {
			desired[externalItemKeyOf(e)] = true
		}
	}
	var external []ExternalItem
	for _, e := range inv.External {
		if len(e.Kind) > limbov1alpha1.MaxItemKind || len(e.ID) > limbov1alpha1.MaxItemID || len(e.Name) > limbov1alpha1.MaxItemName {
			return nil, nil, fmt.Errorf("%w (%d, %d and %d bytes at most): %s item %q",
				ErrItemTooLong, limbov1alpha1.MaxItemKind, limbov1alpha1.MaxItemID, limbov1alpha1.MaxItemName,
				boundedtext.Cut(e.Kind, 64), boundedtext.Cut(e.ID, 128))
		}
		if !e.Desired && !desired[externalItemKeyOf(e)] {
			external = append(external, e)
		}
	}
	if len(objects)+len(external) > 0 && inv.DesiredListed == 0 && !inv.EmptyDesiredIsValid {
		return nil, nil, ErrEmptyDesired
	}
	return objects, external, nil
}

// ObjectItems returns the object items for the engine to judge (the Items of a
// softdelete.ItemSet), in inventory order: every item listed as desired, and
// every orphan that is not also listed as desired (see Orphans).
func (inv *Inventory) ObjectItems() []ObjectItem {
	if inv == nil {
		return nil
	}
	desired := map[objectItemKey]bool{}
	for _, o := range inv.Objects {
		if o.Desired {
			desired[objectItemKeyOf(o)] = true
		}
	}
	items := make([]ObjectItem, 0, len(inv.Objects))
	for _, o := range inv.Objects {
		if o.Desired || !desired[objectItemKeyOf(o)] {
			items = append(items, o)
		}
	}
	return items
}

// objectItemKey identifies an object item: by group and kind, not version, since
// the same object may be listed through two versions of its API.
type objectItemKey struct {
	kind            schema.GroupKind
	namespace, name string
}

// objectItemKeyOf is o's key; an item without an object, a plugin's bug, has the
// zero key rather than a panic here.
func objectItemKeyOf(o ObjectItem) objectItemKey {
	if o.Object == nil {
		return objectItemKey{}
	}
	return objectItemKey{kind: o.Object.GetObjectKind().GroupVersionKind().GroupKind(), namespace: o.Object.GetNamespace(), name: o.Object.GetName()}
}

// externalItemKey identifies an external item, as its Tombstone's name does.
type externalItemKey struct{ kind, id string }

func externalItemKeyOf(e ExternalItem) externalItemKey {
	return externalItemKey{kind: e.Kind, id: e.ID}
}

// Desired returns the items that should exist (to cancel their countdowns).
func (inv *Inventory) Desired() ([]ObjectItem, []ExternalItem) {
	if inv == nil {
		return nil, nil
	}
	var objects []ObjectItem
	var external []ExternalItem
	for _, o := range inv.Objects {
		if o.Desired {
			objects = append(objects, o)
		}
	}
	for _, e := range inv.External {
		if e.Desired {
			external = append(external, e)
		}
	}
	return objects, external
}

// CallTimeout bounds one Plan, DeleteExternal or Teardown call, so that a hung
// external system never blocks a worker.
const CallTimeout = 30 * time.Second

// CallGrace is how long WithTimeout waits for a call once the call's context
// ended, so that a plugin that honours its context returns its own error (which
// names what it was doing). A call still running then ignores its context, and is
// abandoned.
const CallGrace = 5 * time.Second

// CallWait is how long a worker waits for a plugin call it started before it
// goes on without the result: the call finishes in the background and triggers
// the object it was made for. A slow or hanging plugin (up to CallTimeout and
// CallGrace) never holds a worker, so it never delays another resource's or
// another Bundle's deadline.
const CallWait = 2 * time.Second

// AwaitCall waits until finished is closed (true), or wait has passed or ctx
// ended (false).
func AwaitCall(ctx context.Context, finished <-chan struct{}, wait time.Duration) bool {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-finished:
		return true
	case <-timer.C:
	case <-ctx.Done():
	}
	return false
}

// Trigger queues the reconcile of obj through done, the channel source on which
// a call that outlasted CallWait reports its end. It never blocks: when the
// channel is full the trigger is dropped, and the caller's requeue or the
// periodic resync is the safety net.
func Trigger(done chan<- event.GenericEvent, obj client.Object) {
	select {
	case done <- event.GenericEvent{Object: obj}:
	default:
	}
}

// ErrIgnoredContext is wrapped by the error of a plugin call that had not
// returned CallGrace after its context ended (see WithTimeout).
var ErrIgnoredContext = errors.New("the plugin ignored its context")

// WithTimeout runs f under CallTimeout, with responselimit.CallBudget for all
// the answers f reads from the endpoints a Bundle names (a server's endless
// pages stop there; each answer has its own bound too). A panic of f is its
// error, a *PanicError (see Recover): the Bundle and Tombstone controllers run
// every plugin call through it, most in goroutines of their own.
//
// f runs in a goroutine of its own, so that a plugin that ignores its context (a
// request made without it, a sleep, a lock) cannot hold its caller for ever:
// CallGrace after the context ended, WithTimeout returns an error wrapping
// ErrIgnoredContext and the context's error. Go cannot stop a goroutine: the
// abandoned call runs on until the plugin returns, its result then dropped and
// its panic recovered, and meanwhile the caller may call the plugin again.
func WithTimeout[T any](ctx context.Context, f func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	ctx = responselimit.WithBudget(ctx, responselimit.CallBudget)
	type answer struct {
		v   T
		err error
	}
	// Buffered: an abandoned call's late answer is dropped, not waited for.
	answered := make(chan answer, 1)
	go func() {
		var a answer
		if perr := Recover(ctx, func() { a.v, a.err = f(ctx) }); perr != nil {
			a = answer{err: perr}
		}
		answered <- a
	}()
	var a answer
	select {
	case a = <-answered:
	case <-ctx.Done():
		timer := time.NewTimer(CallGrace)
		defer timer.Stop()
		select {
		case a = <-answered:
		case <-timer.C:
			a.err = fmt.Errorf("%w: no answer %v after its end, the call is abandoned: %w", ErrIgnoredContext, CallGrace, ctx.Err())
		}
	}
	if a.err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return a.v, fmt.Errorf("timed out after %v: %w", CallTimeout, a.err)
	}
	return a.v, a.err
}

// PanicError is the error of a plugin call that panicked: a bug of the plugin
// (or a value it failed to check), which fails that call — the resource's
// PluginFailed, a teardown's DeletionFailure, a Tombstone's retry — instead of
// the controller.
type PanicError struct {
	// Value is what the call panicked with; Stack is where (logged by Recover).
	Value any
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("the plugin panicked (a bug; the stack is in the controller's log): %v", e.Value)
}

// Recover runs f and returns a *PanicError if it panics, logged with the panic
// value and the stack. Plugin calls run beside the passes in goroutines of their
// own, where controller-runtime's recovery of a reconcile's panic does not reach:
// unrecovered, one plugin's panic (on a forged annotation, say) would end the
// controller's process, and again after every restart.
func Recover(ctx context.Context, f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			perr := &PanicError{Value: r, Stack: debug.Stack()}
			log.FromContext(ctx).Error(perr, "plugin call panicked", "panic", fmt.Sprint(r), "stack", string(perr.Stack))
			err = perr
		}
	}()
	f()
	return nil
}
