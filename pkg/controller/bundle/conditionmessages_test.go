package bundle

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
	"github.com/limbo-dev/limbo/pkg/plugin"
)

// conditionMessageLimit is the most characters the Bundle CRD allows a
// condition's message (metav1.Condition): a longer one fails the status write.
const conditionMessageLimit = 32768

// moreTail ends a message that left items out (before " to be deleted" in
// ContentRemaining's).
var moreTail = regexp.MustCompile(`… and ([0-9]+) more`)

// wantBounded fails unless every condition message in conditions fits the CRD,
// and the one of typ starts with start and says how many it left out.
func wantBounded(t *testing.T, conditions []metav1.Condition, typ, start string, left int) {
	t.Helper()
	for _, c := range conditions {
		if n := utf8.RuneCountInString(c.Message); n > conditionMessageLimit || len(c.Message) > bundlespec.MessageBudget+200 {
			t.Errorf("%s message is %d characters (%d bytes): the CRD allows %d, the budget is %d", c.Type, n, len(c.Message), conditionMessageLimit, bundlespec.MessageBudget)
		}
	}
	c := meta.FindStatusCondition(conditions, typ)
	if c == nil {
		t.Fatalf("no %s condition", typ)
	}
	if !strings.HasPrefix(c.Message, start) {
		t.Errorf("%s message starts %.120q, want %q", typ, c.Message, start)
	}
	all := moreTail.FindAllStringSubmatch(c.Message, -1) // the last: an item may hold a list of its own
	if len(all) == 0 || all[len(all)-1][1] != fmt.Sprint(left) {
		t.Errorf("%s message ends %q, want … and %d more", typ, c.Message[max(0, len(c.Message)-80):], left)
	}
}

// Every condition message a pass builds from a list (spec errors, resource
// errors, waiting resources, orphans with an invalid delay) is bounded: a spec
// with thousands of errors made a message over the CRD's 32768 characters, and
// every status write of the Bundle failed, for good.
func TestStatusConditionMessagesBounded(t *testing.T) {
	many := func(n int, f func(i int) limbov1alpha1.ResourceStatus) []limbov1alpha1.ResourceStatus {
		out := make([]limbov1alpha1.ResourceStatus, n)
		for i := range out {
			out[i] = f(i)
		}
		return out
	}
	var specErrs bundlespec.Errors
	for i := range 3000 {
		specErrs = append(specErrs, bundlespec.Error{Resource: fmt.Sprintf("w%04d", i), Reason: limbov1alpha1.ReasonUnknownKind,
			Message: `object: no matches for kind "Widget" in version "example.com/v1"`})
	}
	var badDelays []limbov1alpha1.PendingDeletion
	for i := range 3000 {
		badDelays = append(badDelays, limbov1alpha1.PendingDeletion{APIVersion: "v1", Kind: "ConfigMap", Name: fmt.Sprintf("old-%04d", i),
			Message: `invalid limbo.dev/deletionDelay "soon": time: invalid duration "soon"; never deleted until fixed`})
	}
	huge := strings.Repeat("x", 40000)
	for _, tc := range []struct {
		name  string
		pass  *pass
		types []string // the conditions whose message is the list
		start string
		left  int
	}{
		{name: "3000 spec errors", pass: &pass{specErrs: specErrs},
			types: []string{limbov1alpha1.ConditionReady, limbov1alpha1.ConditionStalled},
			start: `invalid spec: resource "w0000": object: no matches for kind "Widget" in version "example.com/v1"; resource "w0001": `, left: 2903},
		{name: "3000 errors that need a change", pass: &pass{resources: many(3000, func(i int) limbov1alpha1.ResourceStatus {
			return limbov1alpha1.ResourceStatus{Name: fmt.Sprintf("r%04d", i), State: limbov1alpha1.ResourceError, Reason: limbov1alpha1.ReasonForbidden, Message: "forbidden: cannot patch configmaps"}
		})}, types: []string{limbov1alpha1.ConditionReady, limbov1alpha1.ConditionStalled}, start: `resource "r0000": forbidden: cannot patch configmaps; resource "r0001": `, left: 2849},
		{name: "3000 transient errors", pass: &pass{resources: many(3000, func(i int) limbov1alpha1.ResourceStatus {
			return limbov1alpha1.ResourceStatus{Name: fmt.Sprintf("r%04d", i), State: limbov1alpha1.ResourceError, Reason: limbov1alpha1.ReasonApplyFailed, Message: "timeout"}
		})}, types: []string{limbov1alpha1.ConditionReady, limbov1alpha1.ConditionReconciling}, start: `resource "r0000": timeout; resource "r0001": timeout; `, left: 2698},
		{name: "one huge error, more after it", pass: &pass{resources: many(2, func(i int) limbov1alpha1.ResourceStatus {
			return limbov1alpha1.ResourceStatus{Name: fmt.Sprintf("r%d", i), State: limbov1alpha1.ResourceError, Reason: limbov1alpha1.ReasonForbidden, Message: huge}
		})}, types: []string{limbov1alpha1.ConditionReady, limbov1alpha1.ConditionStalled}, start: `resource "r0": xxxxxxxx`, left: 1},
		{name: "3000 waiting resources", pass: &pass{resources: many(3000, func(i int) limbov1alpha1.ResourceStatus {
			return limbov1alpha1.ResourceStatus{Name: fmt.Sprintf("r%04d", i), State: limbov1alpha1.ResourceInProgress}
		})}, types: []string{limbov1alpha1.ConditionReady, limbov1alpha1.ConditionReconciling}, start: "waiting for r0000 (InProgress), r0001 (InProgress), ", left: 2592},
		{name: "3000 orphans with an invalid delay", pass: &pass{pending: badDelays},
			types: []string{limbov1alpha1.ConditionReady, limbov1alpha1.ConditionStalled},
			start: `orphans with an invalid deletion delay are never deleted: ConfigMap "old-0000": invalid limbo.dev/deletionDelay "soon"`, left: 2932},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.pass.bundle = &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Generation: 1}}
			st := tc.pass.status()
			for _, typ := range tc.types {
				wantBounded(t, st.Conditions, typ, tc.start, tc.left)
			}
		})
	}
}

// The teardown's conditions are bounded too: ContentRemaining names a wave of
// thousands of objects, DeletionFailure the errors of a spec with hundreds of
// them (its plugin teardown cannot run) — one failure each, so that the list is
// cut between them (joined whole, the spec errors' own bounded text was cut
// with its "… and N more").
func TestTeardownConditionMessagesBounded(t *testing.T) {
	t.Run("a wave of 1000 objects", func(t *testing.T) {
		var objects []client.Object
		for i := range 1000 {
			objects = append(objects, bundleConfigMap(fmt.Sprintf("cm-%04d", i), nil, "example.com/hold"))
		}
		f := newTeardownFixture(t, deletedBundle(nil, limbov1alpha1.BundleStatus{ObservedGeneration: 1}), nil, objects...)
		f.reconcile(t)
		wantBounded(t, f.status(t).Conditions, limbov1alpha1.ConditionContentRemaining, "waiting for ConfigMap cm-0000, ConfigMap cm-0001, ", 570)
		if c := meta.FindStatusCondition(f.status(t).Conditions, limbov1alpha1.ConditionContentRemaining); c != nil && !strings.HasSuffix(c.Message, " more to be deleted") {
			t.Errorf("ContentRemaining ends %q", c.Message[max(0, len(c.Message)-60):])
		}
	})
	t.Run("an invalid spec with 500 errors holds a plugin teardown", func(t *testing.T) {
		registry, err := plugin.NewRegistry(sweeper{done: &atomic.Bool{}})
		if err != nil {
			t.Fatal(err)
		}
		resources := []limbov1alpha1.Resource{{Name: "sweep", Plugin: &limbov1alpha1.PluginResource{Name: "sweeper"}}}
		for i := range 500 {
			raw := fmt.Sprintf(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w%d"}}`, i)
			resources = append(resources, limbov1alpha1.Resource{Name: fmt.Sprintf("w%05d", i), Object: &runtime.RawExtension{Raw: []byte(raw)}})
		}
		f := newTeardownFixture(t, deletedBundle(resources, limbov1alpha1.BundleStatus{ObservedGeneration: 1}), registry,
			&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "data"}})
		f.reconcile(t)
		st := f.status(t)
		wantBounded(t, st.Conditions, limbov1alpha1.ConditionDeletionFailure, `the Bundle's spec is invalid: resource "w00000": object: no matches for kind "Widget" in version "example.com/v1"; resource "w00001": `, 405)
		if c := meta.FindStatusCondition(st.Conditions, limbov1alpha1.ConditionContentRemaining); c == nil || !strings.Contains(c.Message, "plugin resource sweep (its teardown cannot run") {
			t.Errorf("ContentRemaining = %+v, want the plugin resource held", c)
		}
	})
}

// A pass over a spec with thousands of errors writes its status (the Ready and
// Stalled messages fit the CRD) and sends an InvalidSpec Warning of the same
// bounded text.
func TestInvalidSpecMessagesBounded(t *testing.T) {
	var markers strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&markers, "!{undeclared-%d}", i)
	}
	resources := []limbov1alpha1.Resource{{Name: "cfg", Object: &runtime.RawExtension{Raw: []byte(
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg"},"data":{"k":"` + markers.String() + `"}}`)}}}
	for i := range 500 {
		raw := fmt.Sprintf(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w%d"}}`, i)
		resources = append(resources, limbov1alpha1.Resource{Name: fmt.Sprintf("w%03d", i), Object: &runtime.RawExtension{Raw: []byte(raw)}})
	}
	b := deletedBundle(resources, limbov1alpha1.BundleStatus{})
	b.DeletionTimestamp, b.Finalizers = nil, []string{limbov1alpha1.FinalizerTeardown}
	f := newTeardownFixture(t, b, nil)
	events := make(chan string, 16)
	f.r.Recorder = &record.FakeRecorder{Events: events}
	if _, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)}); err == nil {
		t.Fatal("Reconcile of an invalid spec: no error")
	}
	const start = `invalid spec: resource "cfg": uses undeclared references: !{undeclared-0}, !{undeclared-1}, `
	st := f.status(t)
	wantBounded(t, st.Conditions, limbov1alpha1.ConditionReady, start, 427)
	wantBounded(t, st.Conditions, limbov1alpha1.ConditionStalled, start, 427)
	close(events)
	found := false
	for e := range events {
		if !strings.HasPrefix(e, "Warning "+limbov1alpha1.ReasonInvalidSpec+" ") {
			continue
		}
		found = true
		if len(e) > bundlespec.MessageBudget+100 || !strings.HasSuffix(e, "; … and 427 more") {
			t.Errorf("InvalidSpec event of %d bytes, ending %q; want it bounded, ending … and 427 more", len(e), e[max(0, len(e)-60):])
		}
	}
	if !found {
		t.Error("no InvalidSpec event")
	}
}
