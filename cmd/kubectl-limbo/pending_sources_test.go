package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// MESSAGE says each thing once: a message already said adds nothing, one that
// says all of it and more replaces it, another is appended.
func TestAddMessage(t *testing.T) {
	for _, tc := range []struct {
		had, msg, want string
	}{
		{"", "", ""},
		{"", "a", "a"},
		{"a", "a", "a"},
		{"delete failed: timeout", "delete failed", "delete failed: timeout"},
		{"invalid delay", "invalid delay; never deleted", "invalid delay; never deleted"},
		{"a", "b", "a; b"},
	} {
		p := pendingItem{Message: tc.had}
		p.addMessage(tc.msg)
		if p.Message != tc.want {
			t.Errorf("%q + %q = %q, want %q", tc.had, tc.msg, p.Message, tc.want)
		}
	}
}

// A hold shows as held, except on an item never deleted (the hold ending
// would not delete it) or being deleted (no hold stops that).
func TestHold(t *testing.T) {
	for c, want := range map[countdown]countdown{
		countdownRunning:  countdownHeld,
		countdownNow:      countdownHeld,
		countdownUnknown:  countdownHeld,
		countdownNever:    countdownNever,
		countdownDeleting: countdownDeleting,
	} {
		p := pendingItem{countdown: c}
		if p.hold(); p.countdown != want {
			t.Errorf("hold of %d: %d, want %d", c, p.countdown, want)
		}
	}
}

// A Tombstone's row names its item by name and id, the id once when it is the
// name.
func TestDescribeExternalItem(t *testing.T) {
	for _, tc := range []struct {
		item limbov1alpha1.ExternalItem
		want string
	}{
		{limbov1alpha1.ExternalItem{Kind: "Route", Name: "10.0.0.0/24", ID: "r-1"}, `route-gc: Route "10.0.0.0/24" (id r-1)`},
		{limbov1alpha1.ExternalItem{Kind: "Route", Name: "r-1", ID: "r-1"}, `route-gc: Route "r-1"`},
		{limbov1alpha1.ExternalItem{Kind: "Route", ID: "r-1"}, `route-gc: Route id r-1`},
	} {
		ts := &limbov1alpha1.Tombstone{Spec: limbov1alpha1.TombstoneSpec{Plugin: "route-gc", Item: tc.item}}
		if got := describeExternalItem(ts); got != tc.want {
			t.Errorf("describeExternalItem(%+v) = %q, want %q", tc.item, got, tc.want)
		}
	}
}

// A Tombstone not stamped yet whose status has a deadline (the controller's,
// written before a restamp) shows that deadline.
func TestTombstoneItemDeadlineFromStatus(t *testing.T) {
	deadline := testNow.Add(time.Hour).Truncate(time.Second)
	ts := &limbov1alpha1.Tombstone{ObjectMeta: inLimbo("team-a", "t", "shop", "1h", ""),
		Status: limbov1alpha1.TombstoneStatus{DeleteAfter: &metav1.Time{Time: deadline}}}
	p := tombstoneItem(ts, testNow)
	if p.countdown != countdownRunning || p.DeleteAfter == nil || !p.DeleteAfter.Equal(deadline) {
		t.Errorf("countdown %d, deadline %v; want the status's %v", p.countdown, p.DeleteAfter, deadline)
	}
}

// Rows of the same namespace, kind and name (a kind of two API groups) are
// ordered by API version: the order is the same at every run.
func TestSortPendingTies(t *testing.T) {
	items := []pendingItem{
		{Namespace: "a", APIVersion: "example.org/v1", Kind: "Widget", Name: "w", countdown: countdownUnknown},
		{Namespace: "a", APIVersion: "example.com/v1", Kind: "Widget", Name: "w", countdown: countdownUnknown},
	}
	sortPending(items)
	if got := items[0].APIVersion + " " + items[1].APIVersion; got != "example.com/v1 example.org/v1" {
		t.Errorf("order %s", got)
	}
}

// A listing that fails is an error, with nothing printed: the Tombstones or
// the Bundles cannot be listed (the Bundles' CRD not installed says so), or
// discovery fails. A resource type whose LIST answers 404 (its CRD removed
// since discovery) has nothing in limbo: it is skipped, and the list is
// complete. A list left incomplete by a resource type that could not be listed
// is never "Nothing in limbo", however little it shows.
func TestPendingListingFails(t *testing.T) {
	failTyped := func(kind string, err error) *interceptor.Funcs {
		return &interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, typed := list.(*metav1.PartialObjectMetadataList); !typed && strings.HasSuffix(fmt.Sprintf("%T", list), "."+kind) {
				return err
			}
			return c.List(ctx, list, opts...)
		}}
	}
	for _, tc := range []struct {
		name     string
		funcs    *interceptor.Funcs
		disco    error
		args     []string
		wantCode int
		wantErr  string
	}{
		{"Tombstones", failTyped("TombstoneList", apierrors.NewServiceUnavailable("etcd timeout")), nil, nil, 1,
			"error: listing Tombstones: etcd timeout\n"},
		{"Bundles, their CRD not installed", failTyped("BundleList", &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "limbo.dev", Kind: "Bundle"}}), nil, nil, 1,
			`error: listing Bundles: no matches for kind "Bundle" in group "limbo.dev" (are limbo's CRDs installed?)` + "\n"},
		{"a kind whose CRD went", failLists(map[string]error{"TombstoneList": apierrors.NewNotFound(schema.GroupResource{Group: "limbo.dev", Resource: "tombstones"}, "")}), nil, nil, 0, ""},
		{"discovery", nil, errors.New("connection refused"), nil, 1, "error: discovering resource types: connection refused\n"},
		{"the only kind in limbo there", failLists(map[string]error{"ConfigMapList": apierrors.NewServiceUnavailable("try later")}), nil, []string{"-n", "team-b"}, 1,
			"Warning: listing configmaps: try later; objects of this type in limbo are not shown\n" +
				"error: the list above is incomplete: 1 resource types could not be listed\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.funcs, pendingObjects()...)
			if tc.disco != nil {
				f.clients.discovery = newTestDiscovery(defaultResources(), tc.disco)
			}
			args := []string{"pending", "-n", "team-a", "-o", "json"}
			if tc.args != nil {
				args = append([]string{"pending"}, tc.args...) // a table
			}
			code, out, errOut := f.run(args...)
			if code != tc.wantCode || errOut != tc.wantErr || tc.args == nil && (tc.wantCode != 0) != (out == "") {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q", code, out, errOut, tc.wantCode, tc.wantErr)
			}
		})
	}
}

// An item in another cluster is not read in this one: an object of this
// cluster of the same name is another object, whose delay is not the item's.
func TestPendingRemoteItemNotReadHere(t *testing.T) {
	remote := &limbov1alpha1.Bundle{
		ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "east", UID: uid("east")},
		Status: limbov1alpha1.BundleStatus{PendingDeletions: []limbov1alpha1.PendingDeletion{
			{APIVersion: "v1", Kind: "ConfigMap", Namespace: "clusters", Name: "settings", Cluster: "east-kubeconfig",
				DeleteAfter: &metav1.Time{Time: testNow.Add(time.Hour)}},
		}},
	}
	local := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "settings",
		Annotations: map[string]string{limbov1alpha1.AnnotationDeletionDelay: "7h"}}}
	f := newFixture(t, nil, remote, local)
	code, out, errOut := f.run("pending", "-n", "clusters", "-o", "wide")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if !strings.Contains(out, "<unknown>") || strings.Contains(out, "7h") {
		t.Errorf("the remote item's DELAY is not <unknown>:\n%s", out)
	}
}

// invalidations counts the Invalidate calls of a cached discovery.
type invalidations struct {
	discovery.CachedDiscoveryInterface
	n *int
}

func (d invalidations) Invalidate() {
	*d.n++
	d.CachedDiscoveryInterface.Invalidate()
}

// pending drops kubectl's discovery cache before it lists the resource types:
// a type installed since the cache was written (up to 6 hours old) may hold
// objects in limbo, and what is in limbo has to be complete.
func TestPendingRefreshesDiscovery(t *testing.T) {
	f := newFixture(t, nil, pendingObjects()...)
	n := 0
	f.clients.discovery = invalidations{f.clients.discovery, &n}
	if code, _, errOut := f.run("pending", "-n", "team-a"); code != 0 || n != 1 {
		t.Errorf("exit %d, stderr %q, the discovery cache dropped %d times; want once", code, errOut, n)
	}
}
