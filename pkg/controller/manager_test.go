package controller

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// A Lease namespace that does not exist, or a Lease the controller may not
// read (no Role in that namespace: the election would be refused for ever,
// every replica ready and none reconciling), stops the controller with a
// message that says what to do; a namespace that exists passes, with its Lease
// or without (the first leader creates it).
func TestCheckLeaseNamespace(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(NewScheme()).WithObjects(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "limbo-system"}}).Build()
	if err := checkLeaseNamespace(c, "limbo-system", "limbo"); err != nil {
		t.Errorf("existing namespace: %v", err)
	}
	err := checkLeaseNamespace(c, "missing", "limbo")
	if err == nil || !strings.Contains(err.Error(), "--leader-election-namespace") || !strings.Contains(err.Error(), "--leader-elect=false") {
		t.Errorf("missing namespace: %v, want an error naming the flags", err)
	}
	forbidden := interceptor.NewClient(c, interceptor.Funcs{Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if _, lease := obj.(*coordinationv1.Lease); lease {
			return apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, key.Name, errors.New("RBAC: no Role"))
		}
		return cl.Get(ctx, key, obj, opts...)
	}})
	err = checkLeaseNamespace(forbidden, "limbo-system", "limbo")
	if err == nil || !strings.Contains(err.Error(), `may not read its Lease limbo-system/limbo`) || !strings.Contains(err.Error(), "--leader-election-namespace") {
		t.Errorf("Lease forbidden: %v, want an error naming the Lease and the flag", err)
	}
}

// Leader election is on by default, with the usual lease timings.
func TestDefaultOptionsElectALeader(t *testing.T) {
	o := DefaultOptions()
	if !o.LeaderElect || o.LeaseDuration <= o.RenewDeadline || o.RenewDeadline <= o.RetryPeriod {
		t.Errorf("defaults %+v: want leader election on, lease > renew deadline > retry period", o)
	}
}

// A negative resync period is refused with a message naming the flag: the reaper
// would otherwise scan every kind back to back.
func TestNegativeResyncPeriodIsRefused(t *testing.T) {
	o := DefaultOptions()
	o.ResyncPeriod = -time.Minute
	if _, err := NewManager(&rest.Config{Host: "http://127.0.0.1:1"}, o); err == nil || !strings.Contains(err.Error(), "--resync-period") {
		t.Errorf("error %v, want one naming --resync-period", err)
	}
}

// Options the controller cannot run with fail at start, naming their flag,
// instead of being replaced silently or failing later.
func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Options)
		want   string // "" valid
	}{
		{"defaults", func(*Options) {}, ""},
		{"no leader election, odd lease timings", func(o *Options) { o.LeaderElect, o.LeaseDuration = false, time.Second }, ""},
		{"QPS 0 (client-go would use 5)", func(o *Options) { o.QPS = 0 }, "--kube-api-qps 0: must be a number above 0"},
		{"negative QPS (client-go would not limit)", func(o *Options) { o.QPS = -1 }, "--kube-api-qps -1"},
		{"QPS NaN (client-go would not limit)", func(o *Options) { o.QPS = float32(math.NaN()) }, "--kube-api-qps NaN: must be a number above 0"},
		{"QPS infinite (client-go would not limit)", func(o *Options) { o.QPS = float32(math.Inf(1)) }, "--kube-api-qps +Inf: must be a number above 0"},
		{"burst below 1", func(o *Options) { o.Burst = -1 }, "--kube-api-burst -1: must be at least 1"},
		{"no workers", func(o *Options) { o.Workers = 0 }, "--workers 0"},
		{"no apply concurrency", func(o *Options) { o.ApplyConcurrency = 0 }, "--apply-concurrency 0"},
		{"negative GC interval", func(o *Options) { o.NamespaceGCInterval = -time.Hour }, "--namespace-delete-gc-interval -1h0m0s"},
		{"GC off", func(o *Options) { o.NamespaceGCInterval = 0 }, ""},
		{"GC every nanosecond (a login and a listing every pass)", func(o *Options) { o.NamespaceGCInterval = time.Nanosecond }, "--namespace-delete-gc-interval 1ns: must be 0s (the periodic collection off) or at least 1s"},
		{"resync off", func(o *Options) { o.ResyncPeriod = 0 }, ""},
		{"resync every minute", func(o *Options) { o.ResyncPeriod = time.Minute }, ""},
		{"resync every nanosecond (a full scan every pass)", func(o *Options) { o.ResyncPeriod = time.Nanosecond }, "--resync-period 1ns: must be 0s (the periodic resync off) or at least 1m0s"},
		{"namespaces", func(o *Options) { o.Namespaces = []string{"team-a", "team-b"} }, ""},
		{"a trailing comma in the namespaces (every namespace)", func(o *Options) { o.Namespaces = []string{"team-a", ""} }, `--namespaces team-a,: "" is not a namespace name`},
		{"a namespace that is no name", func(o *Options) { o.Namespaces = []string{"Team_A"} }, `--namespaces Team_A: "Team_A" is not a namespace name`},
		{"negative GC delay", func(o *Options) { o.NamespaceGCDelay = -time.Second }, "--namespace-delete-gc-delay -1s"},
		{"no plugin event pacing", func(o *Options) { o.PluginEventInterval = 0 }, ""},
		{"negative plugin event interval", func(o *Options) { o.PluginEventInterval = -time.Second }, "--plugin-event-interval -1s: must not be negative"},
		{"a default ServiceAccount that is no name", func(o *Options) { o.DefaultServiceAccount = "Deployer!" }, "--default-service-account Deployer!"},
		{"renew deadline not above the retry period", func(o *Options) { o.RenewDeadline = o.RetryPeriod }, "--leader-election-renew-deadline 2s"},
		{"lease not above renew deadline plus retry period (two leaders for a moment)", func(o *Options) {
			o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 15*time.Second, 14*time.Second, 2*time.Second
		}, "--leader-election-lease-duration 15s: must be longer than --leader-election-renew-deadline plus --leader-election-retry-period (16s)"},
		{"no retry period", func(o *Options) { o.RetryPeriod = 0 }, "--leader-election-retry-period 0s"},
		// The Lease keeps whole seconds: 900ms would be written as 0, which the
		// API server refuses (no leader ever), and 12.5s as 12s, no longer than
		// the 12s a leader may act after its last renewal.
		{"a lease under a second", func(o *Options) {
			o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 900*time.Millisecond, 500*time.Millisecond, 200*time.Millisecond
		}, "--leader-election-lease-duration 900ms: must be at least 1s"},
		{"a lease longer than renew deadline plus retry period only by its fraction of a second", func(o *Options) {
			o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 12500*time.Millisecond, 10*time.Second, 2*time.Second
		}, "--leader-election-lease-duration 12.5s: must be longer than --leader-election-renew-deadline plus --leader-election-retry-period (12s), in whole seconds as the Lease keeps it (12s)"},
		{"renew deadline within client-go's jitter of the retry period", func(o *Options) {
			o.RenewDeadline, o.RetryPeriod = 5500*time.Millisecond, 5*time.Second
		}, "--leader-election-renew-deadline 5.5s: must be longer than 1.2 times --leader-election-retry-period (5s)"},
		{"no Lease namespace", func(o *Options) { o.LeaderElectionNamespace = "" }, "--leader-election-namespace and --leader-election-id must be set"},
		// The API server refuses such a Lease for ever: no leader, every replica ready.
		{"a Lease name that is no name", func(o *Options) { o.LeaderElectionID = "limbo_controller" }, "--leader-election-id limbo_controller: not a Lease name"},
		{"a Lease namespace that is no name", func(o *Options) { o.LeaderElectionNamespace = "Limbo" }, "--leader-election-namespace Limbo: not a namespace name"},
		{"no leader election, no Lease name needed", func(o *Options) { o.LeaderElect, o.LeaderElectionID = false, "x_y" }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			tc.change(&o)
			err := o.Validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
}
