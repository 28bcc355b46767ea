package controller

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// A Lease namespace that does not exist stops the controller with a message that
// says what to do; one that exists passes.
func TestCheckLeaseNamespace(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(NewScheme()).WithObjects(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "limbo-system"}}).Build()
	if err := checkLeaseNamespace(c, "limbo-system"); err != nil {
		t.Errorf("existing namespace: %v", err)
	}
	err := checkLeaseNamespace(c, "missing")
	if err == nil || !strings.Contains(err.Error(), "--leader-election-namespace") || !strings.Contains(err.Error(), "--leader-elect=false") {
		t.Errorf("missing namespace: %v, want an error naming the flags", err)
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
