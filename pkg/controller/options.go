package controller

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/limbo-dev/limbo/pkg/controller/bundle"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/plugins/namespacegc"
)

// Options are the controller's tunables; every field has a flag.
type Options struct {
	MetricsAddr string
	ProbeAddr   string
	PprofAddr   string
	// LeaderElect makes replicas elect a leader through a Lease; only the leader
	// runs the controllers and the reaper (everything that writes).
	LeaderElect             bool
	LeaderElectionNamespace string
	LeaderElectionID        string
	// LeaseDuration, RenewDeadline and RetryPeriod are the Lease's timings: a
	// deadline that falls in a failover is late by at most about LeaseDuration.
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	QPS           float32
	Burst         int
	Workers       int
	// ApplyConcurrency bounds the objects of one Bundle applied at once (the
	// independent resources of a dependency wave): at most Workers ×
	// ApplyConcurrency applies are in flight.
	ApplyConcurrency int
	ResyncPeriod     time.Duration
	// Namespaces restricts the watched namespaces; empty watches all.
	Namespaces []string
	// WatchLabelSelector restricts the controller to the Bundles it selects, and
	// to their objects and Tombstones (see package shard); empty handles all.
	WatchLabelSelector string
	// DefaultServiceAccount is impersonated for the Bundles that name no
	// spec.serviceAccountName (see package impersonation); empty: limbo's own
	// identity.
	DefaultServiceAccount string
	// NamespaceGCInterval and NamespaceGCDelay are namespace-gc's defaults for
	// gcInterval and gcDelay.
	NamespaceGCInterval time.Duration
	NamespaceGCDelay    time.Duration
	// PluginEventInterval is the shortest time between two passes of a Bundle
	// that events of a kind its plugins watch (every Node's status update, for
	// node-removal) or of its Tombstones bring; 0 runs a pass at every event.
	PluginEventInterval time.Duration
	// Plugins replaces the compiled-in plugin registry (tests add plugins).
	Plugins *plugin.Registry
}

// MinResyncPeriod is the shortest periodic resync (--resync-period) other than
// off: each one reconciles every Bundle and lists every kind for released
// objects.
const MinResyncPeriod = time.Minute

// DefaultOptions are the flags' defaults.
func DefaultOptions() Options {
	return Options{
		MetricsAddr:             ":8080",
		ProbeAddr:               ":8081",
		LeaderElect:             true,
		LeaderElectionNamespace: "limbo-system",
		LeaderElectionID:        "limbo-controller",
		// client-go's and controller-runtime's usual timings.
		LeaseDuration:       15 * time.Second,
		RenewDeadline:       10 * time.Second,
		RetryPeriod:         2 * time.Second,
		QPS:                 50,
		Burst:               100,
		Workers:             4,
		ApplyConcurrency:    4,
		ResyncPeriod:        30 * time.Minute,
		NamespaceGCInterval: time.Hour,
		NamespaceGCDelay:    20 * time.Second,
		PluginEventInterval: bundle.DefaultPluginEventInterval,
	}
}

// BindFlags registers the options as flags with their current values as defaults.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr, "Address of the Prometheus /metrics endpoint; 0 disables it.")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", o.ProbeAddr, "Address of /healthz and /readyz; 0 disables them.")
	fs.StringVar(&o.PprofAddr, "pprof-bind-address", o.PprofAddr, "Address of /debug/pprof; empty disables it.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Elect a leader through a Lease so that only one replica reconciles and deletes; --leader-elect=false for a single process that must act at once.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace, "Namespace of the leader election Lease (it must exist); $POD_NAMESPACE, which the Deployment sets to its own, when set.")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", o.LeaderElectionID, "Name of the leader election Lease.")
	fs.DurationVar(&o.LeaseDuration, "leader-election-lease-duration", o.LeaseDuration, "How long a standby waits after the leader's last renewal before it takes over: the most a deadline is late in a failover.")
	fs.DurationVar(&o.RenewDeadline, "leader-election-renew-deadline", o.RenewDeadline, "How long the leader retries renewing its Lease before it gives up leadership (and exits); less than the lease duration.")
	fs.DurationVar(&o.RetryPeriod, "leader-election-retry-period", o.RetryPeriod, "How often candidates try to acquire or renew the Lease.")
	fs.Float32Var(&o.QPS, "kube-api-qps", o.QPS, "Client-side requests per second to the API server.")
	fs.IntVar(&o.Burst, "kube-api-burst", o.Burst, "Client-side burst of requests to the API server.")
	fs.IntVar(&o.Workers, "workers", o.Workers, "Bundles reconciled in parallel, and Tombstones; also the most external deletes sent to one plugin resource (one backend) at a time.")
	fs.IntVar(&o.ApplyConcurrency, "apply-concurrency", o.ApplyConcurrency, "Objects of one Bundle applied in parallel: the resources of a dependency wave (those whose dependencies are all Ready) are independent; 1 applies them one by one. The orphans one pass stamps or deletes use the same bound. At most --workers × this many applies are in flight.")
	fs.DurationVar(&o.ResyncPeriod, "resync-period", o.ResyncPeriod, "Periodic full resync, a safety net: reconciles are event-driven and countdowns requeue at their deadline. Every Bundle is reconciled and every kind scanned for released objects this often (at least 1m); 0s turns it off (the scan still runs at start, and again soon after one that could not list every kind).")
	fs.DurationVar(&o.NamespaceGCInterval, "namespace-delete-gc-interval", o.NamespaceGCInterval, "namespace-gc: default period of the full garbage collection (gcInterval); 0s disables it.")
	fs.DurationVar(&o.NamespaceGCDelay, "namespace-delete-gc-delay", o.NamespaceGCDelay, "namespace-gc: default delay before the first full garbage collection (gcDelay).")
	fs.DurationVar(&o.PluginEventInterval, "plugin-event-interval", o.PluginEventInterval, "Shortest time between two passes of a Bundle that events of a kind its plugins watch (Nodes for node-removal, Namespaces for namespace-gc) or of its Tombstones bring: the first event after a quiet interval runs a pass at once, the rest within the interval one pass at its end. 0s runs a pass at every event.")
	fs.StringVar(&o.WatchLabelSelector, "watch-label-selector", o.WatchLabelSelector, "Handle only the Bundles this label selector matches (for example limbo.dev/shard=a, or !limbo.dev/shard for the rest), and their objects and Tombstones: one shard of a sharded install. Empty handles every Bundle.")
	fs.StringVar(&o.DefaultServiceAccount, "default-service-account", o.DefaultServiceAccount, "ServiceAccount (in each Bundle's namespace) to impersonate for the Bundles that set no spec.serviceAccountName: for multi-tenant installs. Empty: limbo writes as itself.")
	fs.StringSliceVar(&o.Namespaces, "namespaces", o.Namespaces, "Namespaces to watch (comma-separated); empty watches all.")
}

// Validate reports every option whose value the controller cannot run with,
// naming its flag: bad input fails at start with a clear message rather than
// being replaced silently (client-go turns a QPS of 0 into 5 and a negative one
// into no limit; controller-runtime turns 0 workers into 1) or failing later.
func (o Options) Validate() error {
	var errs []error
	bad := func(flag string, value any, why string) {
		errs = append(errs, fmt.Errorf("--%s %v: %s", flag, value, why))
	}
	for _, c := range []struct {
		flag    string
		value   any
		invalid bool
		why     string
	}{
		// NaN and +Inf pass "> 0" the wrong way round: client-go then has no limiter at all.
		{"kube-api-qps", o.QPS, !(o.QPS > 0) || math.IsInf(float64(o.QPS), 1), "must be a number above 0"},
		{"kube-api-burst", o.Burst, o.Burst < 1, "must be at least 1"},
		{"workers", o.Workers, o.Workers < 1, "must be at least 1"},
		{"apply-concurrency", o.ApplyConcurrency, o.ApplyConcurrency < 1, "must be at least 1"},
		// Each resync lists every kind cluster-wide from the API server.
		{"resync-period", o.ResyncPeriod, o.ResyncPeriod < 0 || o.ResyncPeriod > 0 && o.ResyncPeriod < MinResyncPeriod,
			fmt.Sprintf("must be 0s (the periodic resync off) or at least %v", MinResyncPeriod)},
		{"namespace-delete-gc-interval", o.NamespaceGCInterval, o.NamespaceGCInterval < 0 || o.NamespaceGCInterval > 0 && o.NamespaceGCInterval < namespacegc.MinGCInterval,
			fmt.Sprintf("must be 0s (the periodic collection off) or at least %v", namespacegc.MinGCInterval)},
		{"namespace-delete-gc-delay", o.NamespaceGCDelay, o.NamespaceGCDelay < 0, "must not be negative"},
		{"plugin-event-interval", o.PluginEventInterval, o.PluginEventInterval < 0, "must not be negative"},
	} {
		if c.invalid {
			bad(c.flag, c.value, c.why)
		}
	}
	// An empty entry would be "every namespace" to the cache and the reaper: a
	// trailing comma must not lift the restriction.
	for _, ns := range o.Namespaces {
		for _, msg := range validation.IsDNS1123Label(ns) {
			bad("namespaces", strings.Join(o.Namespaces, ","), fmt.Sprintf("%q is not a namespace name: %s", ns, msg))
		}
	}
	if o.DefaultServiceAccount != "" {
		for _, msg := range validation.IsDNS1123Subdomain(o.DefaultServiceAccount) {
			bad("default-service-account", o.DefaultServiceAccount, "not a ServiceAccount name: "+msg)
		}
	}
	if o.LeaderElect {
		// A leader gives up at most RenewDeadline (and a retry) after its last
		// renewal; a standby takes over LeaseDuration after it. The other way
		// round, two replicas would act at once for a moment.
		// The Lease keeps its duration in whole seconds (client-go truncates),
		// and a standby reads it there: that, not the flag, is what is
		// compared. client-go also wants the renew deadline above the retry
		// period with its jitter, or the manager fails at start naming no flag.
		lease := o.LeaseDuration.Truncate(time.Second)
		switch {
		case o.RetryPeriod <= 0:
			bad("leader-election-retry-period", o.RetryPeriod, "must be above 0")
		case float64(o.RenewDeadline) <= leaderelection.JitterFactor*float64(o.RetryPeriod):
			bad("leader-election-renew-deadline", o.RenewDeadline, fmt.Sprintf("must be longer than %v times --leader-election-retry-period (%v), client-go's jitter", leaderelection.JitterFactor, o.RetryPeriod))
		case lease < time.Second:
			bad("leader-election-lease-duration", o.LeaseDuration, "must be at least 1s: the Lease keeps it in whole seconds, and the API server refuses 0")
		case lease <= o.RenewDeadline+o.RetryPeriod:
			bad("leader-election-lease-duration", o.LeaseDuration, fmt.Sprintf("must be longer than --leader-election-renew-deadline plus --leader-election-retry-period (%v), in whole seconds as the Lease keeps it (%v): a leader may act until then after its last renewal", o.RenewDeadline+o.RetryPeriod, lease))
		}
		if o.LeaderElectionNamespace == "" || o.LeaderElectionID == "" {
			errs = append(errs, fmt.Errorf("--leader-election-namespace and --leader-election-id must be set with --leader-elect"))
		} else {
			// The API server refuses such a Lease at every try: no leader, ever.
			for _, msg := range validation.IsDNS1123Subdomain(o.LeaderElectionID) {
				bad("leader-election-id", o.LeaderElectionID, "not a Lease name: "+msg)
			}
			for _, msg := range validation.IsDNS1123Label(o.LeaderElectionNamespace) {
				bad("leader-election-namespace", o.LeaderElectionNamespace, "not a namespace name: "+msg)
			}
		}
	}
	return errors.Join(errs...)
}
