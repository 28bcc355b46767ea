package deorbit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/boundedtext"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/remotecluster"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// Name is the plugin's registered name.
const Name = "deorbit"

// Events on the Bundle (DESIGN.md §5, deorbit).
const (
	// EventDeorbitDeleted (Normal): every item of a kind is gone from the target.
	EventDeorbitDeleted = "DeorbitDeleted"
	// EventDeorbitWaiting (Normal): deorbit waits for PVs, held Services or load
	// balancers to go.
	EventDeorbitWaiting = "DeorbitWaiting"
	// EventDeorbitDone (Normal): the target is clean; the teardown goes on.
	EventDeorbitDone = "DeorbitDone"
	// EventDeorbitTimedOut (Warning): deorbit gave up and lists the debris.
	EventDeorbitTimedOut = "DeorbitTimedOut"
	// EventDeorbitFailed (Warning): a pass failed (the kubeconfig Secret, the
	// target unreachable or slow, a listing); it is retried.
	EventDeorbitFailed = "DeorbitFailed"
)

// Defaults of the spec.
const (
	DefaultLoadBalancerWait      = 5 * time.Minute
	DefaultTimeout               = 24 * time.Hour
	DefaultAPIUnavailableTimeout = 2 * time.Minute
)

// armedPollInterval refreshes the armed report: the target's changes are not
// watched (it may be another cluster).
const armedPollInterval = time.Minute

// requestTimeout bounds each request to a remote target, well within
// plugin.CallTimeout, so that a hung target fails a pass instead of eating it.
const requestTimeout = 10 * time.Second

// Spec is the plugin's input; its schema is generated from it (plugin.SchemaOf).
type Spec struct {
	// KubeConfigSecretRef names the Secret, in the Bundle's namespace, holding the
	// target cluster's kubeconfig; absent: this cluster.
	KubeConfigSecretRef *remotecluster.SecretRef `json:"kubeConfigSecretRef,omitempty"`
	// Provisioners are the CSI drivers whose PVs' claims are deleted; empty: any
	// CSI driver.
	Provisioners []string `json:"provisioners,omitempty"`
	// VolumeSnapshots deletes VolumeSnapshots (default true); skipped when the
	// CRD is absent.
	VolumeSnapshots *bool `json:"volumeSnapshots,omitempty"`
	// LoadBalancerWait is how long a LoadBalancer Service that no finalizer guards
	// counts as still there after its delete (default 5m).
	LoadBalancerWait *string `json:"loadBalancerWait,omitempty" schema:"duration"`
	// Timeout gives up, from deorbit's first teardown pass, normally the
	// Bundle's deletion (default 24h).
	Timeout *string `json:"timeout,omitempty" schema:"duration"`
	// APIUnavailableTimeout gives up once the target has been unreachable this
	// long (default 2m): every pass failing as remotecluster.IsUnreachable with
	// nothing answered during it. A target that answers some requests while
	// others time out is slow, not unreachable: it is retried until Timeout.
	// This cluster (no KubeConfigSecretRef) is never unreachable: its passes
	// are retried until Timeout.
	APIUnavailableTimeout *string `json:"apiUnavailableTimeout,omitempty" schema:"duration"`
}

// config is a spec with its defaults.
type config struct {
	Spec
	snapshots                       bool
	lbWait, timeout, apiUnavailable time.Duration
}

// parse is the one reading of a spec: CheckSpec refuses what it refuses.
func parse(raw []byte) (config, error) {
	var c config
	if err := json.Unmarshal(raw, &c.Spec); err != nil {
		return c, err
	}
	// Absent, these two widen what deorbit deletes: limbo's own cluster, any
	// CSI driver. An explicit null — a reference that resolved to null, say —
	// is no way to ask for that.
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return c, err
	}
	for _, name := range []string{"kubeConfigSecretRef", "provisioners"} {
		if v, ok := fields[name]; ok && string(bytes.TrimSpace(v)) == "null" {
			return c, field.Invalid(field.NewPath("spec", name), nil, "null: leave the field out to mean its default (for kubeConfigSecretRef: this cluster)")
		}
	}
	c.snapshots = c.VolumeSnapshots == nil || *c.VolumeSnapshots
	var err error
	if c.lbWait, err = plugin.ParseDuration("loadBalancerWait", c.LoadBalancerWait, DefaultLoadBalancerWait, false); err != nil {
		return c, err
	}
	if c.timeout, err = plugin.ParseDuration("timeout", c.Timeout, DefaultTimeout, false); err != nil {
		return c, err
	}
	c.apiUnavailable, err = plugin.ParseDuration("apiUnavailableTimeout", c.APIUnavailableTimeout, DefaultAPIUnavailableTimeout, false)
	return c, err
}

// CheckSpec refuses a spec that parse refuses (plugin.SpecChecker).
func (*Plugin) CheckSpec(raw []byte) error {
	_, err := parse(raw)
	return err
}

// Options configure the plugin.
type Options struct {
	// Metrics records deorbit's metrics (NewMetrics); nil records into
	// unregistered ones.
	Metrics *Metrics
}

// Plugin is the deorbit plugin.
type Plugin struct {
	opts     Options
	clusters *remotecluster.Cache
	// localUID is this cluster's remotecluster.ClusterUID, once read.
	localUID atomic.Pointer[types.UID]
}

// New returns the plugin.
func New(opts Options) *Plugin {
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(nil)
	}
	return &Plugin{opts: opts, clusters: remotecluster.NewCache(remotecluster.Options{Timeout: requestTimeout})}
}

// Describe names the plugin and its schema. It watches nothing: its target may
// be another cluster; the armed report is refreshed by polling.
func (p *Plugin) Describe() plugin.Description {
	return plugin.Description{Name: Name, Schema: plugin.SchemaOf[Spec](), DefaultPollInterval: armedPollInterval}
}

// target is the cluster deorbit acts on.
type target struct {
	reader client.Reader // from the API server, never a cache
	// cluster is the other cluster the items live in, and clients its clients;
	// nil: this one.
	cluster *softdelete.Cluster
	clients *remotecluster.Clients
	name    string
	// identity is the cluster as the teardown pins it (state.Target): this
	// one, or another by its kube-system Namespace's UID (by its address when
	// that cannot be read).
	identity string
}

func (p *Plugin) target(ctx context.Context, req plugin.Request, cfg config) (target, error) {
	if cfg.KubeConfigSecretRef == nil {
		return target{reader: req.Reader, name: "this cluster", identity: "this cluster"}, nil
	}
	clients, err := p.clusters.Clients(ctx, req.SecretsReader(), req.Bundle.Namespace, *cfg.KubeConfigSecretRef)
	if err != nil {
		return target{}, err
	}
	name := cfg.KubeConfigSecretRef.Name
	t := target{reader: clients.Client, cluster: &softdelete.Cluster{Name: name, Client: clients.Client}, clients: clients,
		name: fmt.Sprintf("the cluster of kubeconfig Secret %s (%s)", name, clients.Host)}
	// t goes with the error: whether the target answered tells a gone target
	// from a slow one (read).
	if err := p.notThisCluster(ctx, req, clients, *cfg.KubeConfigSecretRef); err != nil {
		return t, err
	}
	t.identity = "the cluster at " + clients.Host
	if uid, err := clients.ClusterUID(ctx); err == nil { // read by notThisCluster: no request
		t.identity = fmt.Sprintf("the cluster whose kube-system Namespace has UID %s", uid)
	}
	return t, nil
}

// notThisCluster refuses a kubeconfig that reaches limbo's own cluster (a
// kubernetes.default.svc server, a management cluster's own kubeconfig Secret
// named by mistake): deorbit would treat it as another cluster — its selection
// every namespace's, its stamps over other Bundles' delays, none of the
// warnings of this-cluster mode — with the kubeconfig's identity. Mode follows
// intent: without kubeConfigSecretRef deorbit acts on this cluster. A read that
// fails fails the pass (retried: the check is not skipped for a moment's
// error), but for the answers that say a kube-system Namespace cannot be read
// at all (an identity that may not get Namespaces, a cluster without one):
// then nothing is known, and the kubeconfig is taken as it is.
func (p *Plugin) notThisCluster(ctx context.Context, req plugin.Request, clients *remotecluster.Clients, ref remotecluster.SecretRef) error {
	unknowable := func(err error) bool {
		return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) || apierrors.IsNotFound(err)
	}
	local := p.localUID.Load()
	if local == nil {
		uid, err := remotecluster.ClusterUID(ctx, req.Reader)
		switch {
		case unknowable(err):
			return nil
		case err != nil:
			return fmt.Errorf("read this cluster's kube-system Namespace, to tell it from the target: %w", err)
		}
		p.localUID.Store(&uid)
		local = &uid
	}
	remote, err := clients.ClusterUID(ctx)
	switch {
	case unknowable(err):
		return nil
	case err != nil:
		return fmt.Errorf("read the target's kube-system Namespace, to tell it from this cluster: %w", err)
	case remote != *local:
		return nil
	}
	return &remotecluster.Error{Secret: types.NamespacedName{Namespace: req.Bundle.Namespace, Name: ref.Name}, Key: ref.KeyOrDefault(), Reason: remotecluster.ReasonThisCluster,
		Err: fmt.Errorf("it reaches limbo's own cluster (%s; its kube-system Namespace has UID %s here too): deorbit refuses it; to deorbit this cluster, leave kubeConfigSecretRef out", clients.Host, remote)}
}

// Plan is the armed report: what deorbit would remove from its target, read from
// it; nothing is deleted and nothing is inventoried while the Bundle lives.
func (p *Plugin) Plan(ctx context.Context, req plugin.Request) (*plugin.Result, error) {
	cfg, err := parse(req.Spec)
	if err != nil {
		return nil, err
	}
	// Both count from the Bundle's deletion (the timeout from deorbit's first
	// pass, normally then): a delay that is not shorter than the timeout gives
	// up before anything is due, and deletes nothing.
	if delay, err := time.ParseDuration(deletionDelay(req)); err == nil && delay >= cfg.timeout {
		return nil, fmt.Errorf("deletionDelay %v is not shorter than timeout %v: both run from the Bundle's deletion, and deorbit would give up before anything is due; shorten the delay or lengthen the timeout", delay, cfg.timeout)
	}
	t, c, err := p.read(ctx, req, cfg, nil)
	if err != nil {
		return nil, err
	}
	return &plugin.Result{Ready: true, Message: c.armed() + " in " + t.name}, nil
}

// read finds the target and lists its contents, counting a failure by its step.
// A failure to talk to the target is an *unreachableError only if the target is
// another cluster and answered nothing meanwhile (target.answered). This
// cluster is never unreachable: its API server is the one the teardown's state
// is written to, so a pass whose request to it failed or timed out (a listing
// slower than the call while that server is overloaded) is retried until
// timeout; counted unreachable, it gave up after apiUnavailableTimeout, and the
// claims and load balancers it had not deleted were left to the cloud.
func (p *Plugin) read(ctx context.Context, req plugin.Request, cfg config, accept func(target) error) (target, *contents, error) {
	began := time.Now() // LastAnswer's clock: req.Now may be another (tests set it)
	t, err := p.target(ctx, req, cfg)
	if err == nil && accept != nil {
		if err = accept(t); err != nil {
			return t, nil, err // nothing of a target refused is read
		}
	}
	var c *contents
	if err == nil {
		c, err = list(ctx, t.reader, cfg)
	}
	var secretErr *remotecluster.Error
	switch {
	case err == nil:
	case errors.As(err, &secretErr):
		p.opts.Metrics.Failures.WithLabelValues(StepKubeconfig).Inc()
	case remotecluster.IsUnreachable(err) && cfg.KubeConfigSecretRef == nil:
		p.opts.Metrics.Failures.WithLabelValues(StepList).Inc()
		err = fmt.Errorf("%s: a request timed out or failed (limbo's own API server is retried until timeout, never given up as unreachable): %w", t.name, err)
	case remotecluster.IsUnreachable(err) && !t.answered(ctx, began):
		p.opts.Metrics.Failures.WithLabelValues(StepUnreachable).Inc()
		err = &unreachableError{target: t.name, err: err}
	case remotecluster.IsUnreachable(err):
		p.opts.Metrics.Failures.WithLabelValues(StepList).Inc()
		err = fmt.Errorf("%s answered, but a request timed out or failed (the target is slow, not unreachable): %w", t.name, err)
	default:
		p.opts.Metrics.Failures.WithLabelValues(StepList).Inc()
		err = fmt.Errorf("%s: %w", t.name, err)
	}
	return t, c, err
}

// answered reports whether another cluster's API server answered a request
// since began (remotecluster.Clients.LastAnswer): a request of a dying
// cluster's overloaded server may time out (a large listing) while the others
// are answered. When nothing was, the failed request may have been the pass's
// only one: the server is asked for its version, whose answer LastAnswer
// records.
func (t target) answered(ctx context.Context, began time.Time) bool {
	if t.clients.LastAnswer().Before(began) {
		_ = t.clients.Discovery.RESTClient().Get().AbsPath("/version").Do(ctx).Error() // only whether it answers matters
	}
	return !t.clients.LastAnswer().Before(began)
}

// unreachableError is a read of a target that answered nothing during it: what
// apiUnavailableTimeout counts.
type unreachableError struct {
	target string
	err    error
}

func (e *unreachableError) Error() string { return e.target + " is unreachable: " + e.err.Error() }

func (e *unreachableError) Unwrap() error { return e.err }

// state is deorbit's progress, kept on the Bundle between passes
// (TeardownResult.State): a restarted controller resumes from it.
type state struct {
	// Finished is how the deorbit ended; once set, passes only repeat it.
	Finished string `json:"finished,omitempty"`
	// Warning is the give-up message, shown for the rest of the teardown.
	Warning string `json:"warning,omitempty"`
	// Found counts, per kind, the most items seen; Deleted and Waiting the kinds
	// whose DeorbitDeleted and DeorbitWaiting events were emitted.
	Found   map[string]int  `json:"found,omitempty"`
	Deleted map[string]bool `json:"deleted,omitempty"`
	Waiting map[string]bool `json:"waiting,omitempty"`
	// LoadBalancersUntil is when the load balancers of Services deleted without
	// a finalizer count as gone.
	LoadBalancersUntil *time.Time `json:"loadBalancersUntil,omitempty"`
	// ItemsGoneAt is when the delete phase ended.
	ItemsGoneAt *time.Time `json:"itemsGoneAt,omitempty"`
	// UnreachableSince is the start of the current run of unreachable passes.
	UnreachableSince *time.Time `json:"unreachableSince,omitempty"`
	// Debris is what the last successful pass saw remaining ("none" for
	// nothing); empty while no pass has listed the target.
	Debris string `json:"debris,omitempty"`
	// LastError is the last failure evented (its first maxLastError bytes), so
	// that a failure is evented once.
	LastError string `json:"lastError,omitempty"`
	// Target is the cluster the teardown began on (target.identity): a later
	// pass acts on that one only.
	Target string `json:"target,omitempty"`
	// Began is when the deorbit began (or started over): its first pass, which
	// the timeout runs from; absent in a state kept by a limbo without it, which
	// runs it from the Bundle's deletion.
	Began *time.Time `json:"began,omitempty"`
}

// maxFound bounds a count of state.Found: far more items of a kind than any
// cluster holds (each is an object of the API server's).
const maxFound = 1 << 20

// maxLastError bounds state.LastError.
const maxLastError = 1 << 10

// decodeState reads the state kept on the Bundle. The annotation is writable by
// whoever may edit the Bundle, so the state is checked, not trusted: one that
// does not read (edited by hand) or does not validate is discarded, with the
// error, and the deorbit starts over from a fresh inventory of the target —
// what it deletes is always read from there, never from the state, so a forged
// state cannot make it delete more. A finished deorbit stays finished (its
// message and warning kept): starting it over could only delete more. A first
// pass (Began) after now, the pass's clock, is taken as now: the timeout runs
// from it, and one ahead — forged, or written by a replica whose clock is
// ahead of this one's — would put the give-up off; discarding the whole state
// for it would lose the pin and the load-balancer wait.
func decodeState(s string, now time.Time) (state, error) {
	var st state
	var err error
	if s != "" {
		if err = json.Unmarshal([]byte(s), &st); err == nil {
			err = st.validate()
		}
		if err != nil {
			st = state{Finished: st.Finished, Warning: st.Warning}
		}
	}
	if st.Began != nil && st.Began.After(now) {
		st.Began = &now
	}
	if st.Found == nil {
		st.Found = map[string]int{}
	}
	if st.Deleted == nil {
		st.Deleted = map[string]bool{}
	}
	if st.Waiting == nil {
		st.Waiting = map[string]bool{}
	}
	return st, err
}

// validate refuses counts no pass could have stored. It names the first bad
// count in key order: its text is in the DeorbitFailed event, and a map walk
// would name another of several from one pass to the next.
func (st state) validate() error {
	for _, key := range slices.Sorted(maps.Keys(st.Found)) {
		if n := st.Found[key]; n < 0 || n > maxFound {
			return fmt.Errorf("found[%q] = %d is outside [0, %d]", key, n, maxFound)
		}
	}
	return nil
}

// encode is the state to keep on the Bundle. It fails only on a time that JSON
// cannot hold (past year 9999): the times it holds are the pass's clock and
// loadBalancersUntil, which trackLoadBalancers bounds by the timeout.
func (st state) encode() (string, error) {
	data, err := json.Marshal(st)
	if err != nil {
		return "", fmt.Errorf("encode the teardown state: %w", err)
	}
	return string(data), nil
}

// Teardown is one pass of the deorbit: items to the engine, waits, give-up.
func (p *Plugin) Teardown(ctx context.Context, req plugin.Request) (*plugin.TeardownResult, error) {
	st, stateErr := decodeState(req.TeardownState, req.Now)
	res := &plugin.TeardownResult{}
	if stateErr != nil {
		// Evented once: the state kept from now on is valid.
		res.Events = append(res.Events, plugin.Event{Type: corev1.EventTypeWarning, Reason: EventDeorbitFailed,
			Message: fmt.Sprintf("discarded the teardown state in annotation %s%s: %v; %s", limbov1alpha1.AnnotationTeardownStatePrefix, req.Resource, stateErr, restartedFrom(st))})
	}
	if st.Finished != "" {
		res.Done, res.Message, res.Warning, res.State = true, st.Finished, st.Warning, req.TeardownState
		if stateErr != nil {
			if res.State, stateErr = st.encode(); stateErr != nil {
				return nil, stateErr
			}
		}
		return res, nil
	}
	cfg, err := parse(req.Spec)
	if err != nil {
		return nil, err
	}
	if req.TeardownState == "" || stateErr != nil {
		// The deorbit begins (or starts over) here; its timeout runs from here
		// (pass.timeoutFrom).
		began := req.Now
		st.Began = &began
	}
	r := &pass{p: p, req: req, cfg: cfg, st: &st, res: res, start: req.Now}
	if ts := req.Bundle.DeletionTimestamp; ts != nil {
		r.start = ts.Time
	}
	t, c, err := p.read(ctx, req, cfg, r.pin)
	if err != nil {
		r.failed(err)
	} else {
		r.progress(t, c)
	}
	state, err := st.encode()
	if err != nil {
		// Not kept, the pass is not acted on: its items, events and end would be
		// handed out again by the next pass, from the state before it.
		err = fmt.Errorf("%w (the pass is not acted on and is retried)", err)
		return &plugin.TeardownResult{Message: err.Error(), State: req.TeardownState,
			Events: []plugin.Event{{Type: corev1.EventTypeWarning, Reason: EventDeorbitFailed, Message: err.Error()}}}, err
	}
	r.res.State = state
	return r.res, r.err
}

// pin refuses a target other than the one the teardown began on: a spec edited
// during a teardown (its kubeConfigSecretRef removed: this cluster, every
// namespace's claims and Services) or a kubeconfig Secret written anew for
// another cluster of the same name would turn the deletions on a cluster that
// is not the one being torn down. Retried, as any failure, until timeout.
func (r *pass) pin(t target) error {
	switch r.st.Target {
	case "":
		r.st.Target = t.identity
	case t.identity:
	default:
		return fmt.Errorf("the target changed since the teardown began: it began on %s and is now %s; deorbit acts only on the cluster it began on: put kubeConfigSecretRef and its Secret back, or remove the resource to go without it", r.st.Target, t.identity)
	}
	return nil
}

// restartedFrom says what a discarded state leaves.
func restartedFrom(st state) string {
	if st.Finished != "" {
		return "the deorbit had finished and stays finished"
	}
	return "the deorbit starts over from a fresh inventory of the target"
}

// pass is one Teardown call.
type pass struct {
	p     *Plugin
	req   plugin.Request
	cfg   config
	st    *state
	res   *plugin.TeardownResult
	err   error
	start time.Time
}

func (r *pass) event(typ, reason, format string, args ...any) {
	r.res.Events = append(r.res.Events, plugin.Event{Type: typ, Reason: reason, Message: fmt.Sprintf(format, args...)})
}

// failed handles a pass that could not read the target: it gives up past the
// timeout, or once the target has been unreachable (an *unreachableError on
// every pass) for apiUnavailableTimeout; otherwise the error is retried (evented
// once per distinct error).
func (r *pass) failed(err error) {
	now := r.req.Now
	var unreachable *unreachableError
	if errors.As(err, &unreachable) {
		if r.st.UnreachableSince == nil {
			r.st.UnreachableSince = &now
		}
		if down := now.Sub(*r.st.UnreachableSince); down >= r.cfg.apiUnavailable {
			r.giveUp(StepAPIUnavailable, fmt.Sprintf("the target was unreachable for %v (apiUnavailableTimeout %v): %v", down.Round(time.Second), r.cfg.apiUnavailable, err))
			return
		}
	} else {
		r.st.UnreachableSince = nil
	}
	if r.timedOut() {
		r.giveUp(StepTimeout, fmt.Sprintf("%s; last error: %v", r.timeoutPassed(), err))
		return
	}
	// Kept in the teardown state, which the Bundle's annotations hold: bounded
	// (an endpoint's error may quote its whole answer).
	if last := boundedtext.Cut(err.Error(), maxLastError); last != r.st.LastError {
		r.st.LastError = last
		r.event(corev1.EventTypeWarning, EventDeorbitFailed, "%v", err)
	}
	r.res.Message = err.Error()
	r.err = err
}

// timeoutFrom is when the timeout runs from: deorbit's first pass (state.Began),
// or the Bundle's deletion if that is later (a clock behind the API server's)
// or the state has none (kept by a limbo without it). Not the deletion alone: a
// first pass past the deletion plus timeout — every replica down, the teardown
// held by a spec error until the Bundle is edited, or by an earlier step —
// gave up at once, its items (all due by then) never handed to the engine, and
// the cluster's volumes and load balancers leaked with deorbit never run. Nor
// one pass of deletes before giving up: an item not stamped yet is stamped in
// one pass and deleted in the next, and the PVs and load balancers would not
// be waited for. A target unreachable meanwhile is given up after
// apiUnavailableTimeout, as always.
func (r *pass) timeoutFrom() time.Time {
	if began := r.st.Began; began != nil && began.After(r.start) {
		return *began
	}
	return r.start
}

func (r *pass) timedOut() bool { return !r.req.Now.Before(r.timeoutFrom().Add(r.cfg.timeout)) }

// timeoutPassed says why a pass past the timeout gives up.
func (r *pass) timeoutPassed() string {
	if from := r.timeoutFrom(); !from.Equal(r.start) {
		return fmt.Sprintf("timeout %v passed since deorbit's first pass, at %s", r.cfg.timeout, from.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("timeout %v passed since the Bundle's deletion", r.cfg.timeout)
}

// giveUp ends the deorbit leaving debris: Warning event DeorbitTimedOut naming
// it, and the teardown goes on.
func (r *pass) giveUp(step, why string) {
	debris := r.st.Debris
	if debris == "" { // no pass listed the target: "none" would read as a cluster found empty
		debris = "unknown (the target cluster was never listed)"
	}
	// Kept in the teardown state (Finished, Warning), which the Bundle's
	// annotations hold: why may end with an endpoint's whole answer, and a
	// state too large to keep made every pass give up again, never kept.
	msg := fmt.Sprintf("gave up: %s; debris left behind: %s", boundedtext.Cut(why, maxLastError), debris)
	r.p.opts.Metrics.Failures.WithLabelValues(step).Inc()
	r.p.opts.Metrics.PhaseDuration.WithLabelValues(PhaseTotal).Observe(r.req.Now.Sub(r.start).Seconds())
	r.event(corev1.EventTypeWarning, EventDeorbitTimedOut, "%s", msg)
	r.st.Finished, r.st.Warning = msg, msg
	r.res.Done, r.res.Message, r.res.Warning = true, msg, msg
}

// progress hands the items to the engine and decides what remains to wait for.
func (r *pass) progress(t target, c *contents) {
	now := r.req.Now
	r.st.UnreachableSince, r.st.LastError = nil, ""
	if r.st.Debris = c.debris(); r.st.Debris == "" {
		r.st.Debris = "none"
	}
	if r.timedOut() {
		r.giveUp(StepTimeout, r.timeoutPassed())
		return
	}
	r.res.Items, r.res.Cluster = c.items(), t.cluster
	kinds := c.kinds()
	for _, key := range []string{kindSnapshots, kindClaims, kindServices} {
		n := len(kinds[key].names)
		r.st.Found[key] = max(r.st.Found[key], n)
		if n == 0 && r.st.Found[key] > 0 && !r.st.Deleted[key] {
			r.st.Deleted[key] = true
			r.event(corev1.EventTypeNormal, EventDeorbitDeleted, "deleted %s from %s", countOf(r.st.Found[key], kinds[key].singular, kinds[key].plural), t.name)
		}
	}
	r.trackLoadBalancers(c)

	var remaining []string
	var deleting, held []string
	for _, key := range []string{kindSnapshots, kindClaims, kindServices} {
		k := kinds[key]
		var due, terminating []string
		for _, it := range r.res.Items {
			if describeKind(it.Object) != key {
				continue
			}
			if it.Object.GetDeletionTimestamp() != nil {
				terminating = append(terminating, nameOf(it.Object))
			} else {
				due = append(due, nameOf(it.Object))
			}
		}
		if len(due) > 0 {
			deleting = append(deleting, kind{k.singular, k.plural, due}.describe())
		}
		if len(terminating) > 0 {
			held = append(held, kind{k.singular, k.plural, terminating}.describe())
			r.waiting(key, "waiting for %s, being deleted, to be gone", kind{k.singular, k.plural, terminating}.describe())
		}
	}
	if len(deleting) > 0 {
		remaining = append(remaining, "to delete: "+strings.Join(deleting, ", "))
	}
	if len(held) > 0 {
		remaining = append(remaining, "being deleted: "+strings.Join(held, ", "))
	}
	if v := kinds[kindVolumes]; len(v.names) > 0 {
		r.waiting(kindVolumes, "waiting for %s to be deleted by their provisioner", v.describe())
		remaining = append(remaining, "waiting for "+v.describe()+" to be deleted by their provisioner")
	}
	if len(r.res.Items) == 0 && r.st.ItemsGoneAt == nil {
		r.st.ItemsGoneAt = &now
		r.p.opts.Metrics.PhaseDuration.WithLabelValues(PhaseDelete).Observe(now.Sub(r.start).Seconds())
	}
	if until := r.st.LoadBalancersUntil; until != nil && now.Before(*until) && len(c.services) == 0 {
		r.waiting("load balancers", "waiting until %s for the load balancers of LoadBalancer Services deleted without the %s finalizer (loadBalancerWait %v)",
			until.UTC().Format(time.RFC3339), FinalizerLoadBalancerCleanup, r.cfg.lbWait)
		remaining = append(remaining, "waiting until "+until.UTC().Format(time.RFC3339)+" for load balancers (loadBalancerWait)")
		r.res.RequeueAfter = until.Sub(now)
	}
	if len(remaining) > 0 {
		r.res.Message = strings.Join(remaining, "; ") + " in " + t.name
		return
	}
	r.done(t)
}

// trackLoadBalancers pushes the load-balancer wait past the delete of each
// LoadBalancer Service without the cloud controller's finalizer: its deadline,
// as the state machine decides it for the Service as an item of the resource
// (the stamp plus the resource's deletionDelay; now plus the delay for one not
// stamped yet), or now if that passed, plus loadBalancerWait. One being deleted
// but held by another finalizer counts too, at every pass that sees it: its load
// balancer goes only once it is gone.
func (r *pass) trackLoadBalancers(c *contents) {
	items := softdelete.ItemSet{Delay: deletionDelay(r.req), NotBefore: r.start, CountFrom: r.start} // as the teardown hands them to the engine
	for _, svc := range c.services {
		if slices.Contains(svc.Finalizers, FinalizerLoadBalancerCleanup) {
			continue
		}
		due := r.req.Now
		if d := items.Decide(r.req.Now, softdelete.Item{Object: svc}); d.Deadline.After(due) {
			due = d.Deadline
		}
		// Never past the timeout, when the deorbit gives up anyway: a Service's
		// stamp (which its namespace's users may write) at year 9999 would make a
		// time that JSON cannot hold.
		until := due.Add(r.cfg.lbWait)
		if end := r.timeoutFrom().Add(r.cfg.timeout); until.After(end) {
			until = end
		}
		if r.st.LoadBalancersUntil == nil || until.After(*r.st.LoadBalancersUntil) {
			r.st.LoadBalancersUntil = &until
		}
	}
}

// waiting emits DeorbitWaiting for key, once.
func (r *pass) waiting(key, format string, args ...any) {
	if !r.st.Waiting[key] {
		r.st.Waiting[key] = true
		r.event(corev1.EventTypeNormal, EventDeorbitWaiting, format, args...)
	}
}

func (r *pass) done(t target) {
	now := r.req.Now
	var removed []string
	for _, key := range []string{kindClaims, kindServices, kindSnapshots} {
		if n := r.st.Found[key]; n > 0 {
			removed = append(removed, fmt.Sprintf("%d %s", n, key))
		}
	}
	summary := "nothing to remove"
	if len(removed) > 0 {
		summary = "removed " + strings.Join(removed, ", ")
	}
	msg := fmt.Sprintf("deorbit done in %v: %s from %s", now.Sub(r.start).Round(time.Second), summary, t.name)
	if r.st.ItemsGoneAt != nil {
		r.p.opts.Metrics.PhaseDuration.WithLabelValues(PhaseWait).Observe(now.Sub(*r.st.ItemsGoneAt).Seconds())
	}
	r.p.opts.Metrics.PhaseDuration.WithLabelValues(PhaseTotal).Observe(now.Sub(r.start).Seconds())
	r.event(corev1.EventTypeNormal, EventDeorbitDone, "%s", msg)
	r.st.Finished = msg
	r.res.Done, r.res.Message = true, msg
}

// deletionDelay is the resource's plugin.deletionDelay (validated with the
// spec; "" when absent).
func deletionDelay(req plugin.Request) string {
	if res := req.Bundle.PluginResource(req.Resource); res != nil {
		return res.Plugin.DeletionDelay
	}
	return ""
}

func nameOf(obj client.Object) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}

// describeKind is the kind key of an item.
func describeKind(obj client.Object) string {
	switch obj.GetObjectKind().GroupVersionKind() {
	case VolumeSnapshotGVK:
		return kindSnapshots
	case claimGVK:
		return kindClaims
	}
	return kindServices
}
