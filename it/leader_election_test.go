package it

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// Two replicas of `limbo controller` elect a leader through a Lease: only the
// leader writes. When the leader is killed (SIGKILL: it releases nothing) in the
// middle of a countdown, the other takes over and deletes the object no later
// than its deadline plus the lease duration (plus 2s of slack), once: one delete,
// one event.
func TestLeaderElectionFailover(t *testing.T) {
	env.WithoutController(t)
	ns := env.Namespace(t)
	const (
		lease     = "limbo-ha"
		leaseTime = 6 * time.Second
		delay     = 5 * time.Second // shorter than the lease: the deadline falls in the failover
	)
	args := []string{
		"--namespaces", ns, // only this test's objects: no other test's leftovers in the counts
		"--leader-elect", "--leader-election-namespace", ns, "--leader-election-id", lease,
		"--leader-election-lease-duration", leaseTime.String(),
		"--leader-election-renew-deadline", "4s",
		"--leader-election-retry-period", "500ms",
	}
	first := env.ControllerProcess(t, "first", args...)
	waitLeader(t, first, lease)
	second := env.ControllerProcess(t, "second", args...)

	keep := objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil))
	doomed := objectResource(t, "doomed", configMap("doomed", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: delay.String()}))
	b := createBundle(t, ns, "ha", keep, doomed)
	waitReady(t, b)
	uid := string(getObject(t, configMapGVK, ns, "doomed").GetUID())

	m1, m2 := metricsOf(t, first), metricsOf(t, second)
	if !isLeader(m1, lease) || isLeader(m2, lease) {
		t.Fatalf("leaders: first %v, second %v; want only the first", isLeader(m1, lease), isLeader(m2, lease))
	}
	if writesOf(m1) == 0 {
		t.Fatalf("the leader sent no writes, yet the Bundle is Ready")
	}
	if w := writesOf(m2); w != 0 {
		t.Fatalf("the standby sent %v writes; only the leader may write", w)
	}

	gone := watchConfigMapDeletion(t, ns, "doomed")
	updateBundle(t, b, keep)
	_, stamp := waitInLimbo(t, configMapGVK, ns, "doomed")
	deadline := stamp.Add(delay)
	// The leader's event is sent asynchronously: let it out before the kill.
	waitEventContaining(t, b, corev1.EventTypeNormal, softdelete.EventDeletionScheduled, "ConfigMap "+ns+"/doomed")
	if err := first.Kill(); err != nil {
		t.Fatalf("kill the leader: %v", err)
	}
	if err := existsWithUID(t, configMapGVK, ns, "doomed", uid)(); err != nil {
		t.Fatalf("the leader was killed only after the deadline %s (now %s): %v", deadline.Format(time.RFC3339), time.Now().Format(time.RFC3339Nano), err)
	}

	at := gone.wait(t, testenv.DefaultTimeout)
	if at.Before(deadline) {
		t.Errorf("doomed deleted at %s, before its deadline %s", at.Format(time.RFC3339Nano), deadline)
	}
	if limit := deadline.Add(leaseTime + 2*time.Second); at.After(limit) {
		t.Errorf("doomed deleted at %s, after deadline %s + lease %v + 2s", at.Format(time.RFC3339Nano), deadline.Format(time.RFC3339), leaseTime)
	} else {
		t.Logf("deleted %v after the deadline (lease %v)", at.Sub(deadline).Round(time.Millisecond), leaseTime)
	}
	noPendingDeletions(t, b)

	m2 = metricsOf(t, second)
	if !isLeader(m2, lease) {
		t.Errorf("the second replica is not the leader after the failover")
	}
	deletions := map[string]float64{}
	for _, result := range []string{"deleted", "gone", "failed"} {
		deletions[result] = m2.Sum("limbo_deletions_total", map[string]string{"result": result})
	}
	if deletions["deleted"] != 1 || deletions["gone"] != 0 || deletions["failed"] != 0 {
		t.Errorf("the new leader's deletions by result = %v, want one deleted and nothing else", deletions)
	}
	waitEventContaining(t, b, corev1.EventTypeNormal, softdelete.EventDeleted, "ConfigMap "+ns+"/doomed")
	for _, reason := range []string{softdelete.EventDeletionScheduled, softdelete.EventDeleted} {
		if n := eventCount(t, ns, reason, "ConfigMap "+ns+"/doomed"); n != 1 {
			t.Errorf("%d %s events for doomed, want 1", n, reason)
		}
	}
}

// eventCount counts the events in ns with reason whose message contains part,
// with their repeat counts (the recorder folds repeats into one event).
func eventCount(t testing.TB, ns, reason, part string) int32 {
	t.Helper()
	var list corev1.EventList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatalf("list events: %v", err)
	}
	var n int32
	for _, e := range list.Items {
		if e.Reason == reason && strings.Contains(e.Message, part) {
			n += max(e.Count, 1)
		}
	}
	return n
}
