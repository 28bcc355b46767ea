package bundle

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
)

// condition is one condition's status, reason and message, as a test wants it.
type condition struct {
	status  metav1.ConditionStatus
	reason  string
	message string // "" matches any
}

// The summary of a pass: resourcesReady, and Ready, Reconciling and Stalled by
// the first that applies of: spec errors, resource errors (Stalled unless every
// one is transient), the empty-spec guard, resources still on their way, orphans
// with an invalid deletion delay, all ready.
func TestStatusSummary(t *testing.T) {
	res := func(name string, state limbov1alpha1.ResourceState, reason, msg string) limbov1alpha1.ResourceStatus {
		return limbov1alpha1.ResourceStatus{Name: name, State: state, Reason: reason, Message: msg}
	}
	ready := func(name string) limbov1alpha1.ResourceStatus { return res(name, limbov1alpha1.ResourceReady, "", "") }
	badDelay := limbov1alpha1.PendingDeletion{APIVersion: "v1", Kind: "ConfigMap", Name: "old",
		Message: `invalid ` + limbov1alpha1.AnnotationDeletionDelay + ` "soon"`}
	const (
		T = metav1.ConditionTrue
		F = metav1.ConditionFalse
	)
	for _, tc := range []struct {
		name           string
		pass           *pass
		resourcesReady string
		ready          condition
		reconciling    condition
		stalled        condition
	}{
		{
			name:           "all ready",
			pass:           &pass{resources: []limbov1alpha1.ResourceStatus{ready("db"), ready("app")}},
			resourcesReady: "2/2",
			ready:          condition{T, limbov1alpha1.ReasonReady, "2 resources ready"},
			reconciling:    condition{F, limbov1alpha1.ReasonReady, ""},
			stalled:        condition{F, limbov1alpha1.ReasonReady, ""},
		},
		{
			name:           "nothing declared, nothing managed",
			resourcesReady: "0/0",
			ready:          condition{T, limbov1alpha1.ReasonReady, "0 resources ready"},
			reconciling:    condition{F, limbov1alpha1.ReasonReady, ""},
			stalled:        condition{F, limbov1alpha1.ReasonReady, ""},
		},
		{
			name: "spec errors come first",
			pass: &pass{specErrs: bundlespec.Errors{{Resource: "app", Reason: limbov1alpha1.ReasonMissingReference, Message: `references missing resource "db"`}},
				resources: []limbov1alpha1.ResourceStatus{res("app", limbov1alpha1.ResourceError, limbov1alpha1.ReasonMissingReference, "x")}},
			resourcesReady: "0/1",
			ready:          condition{F, limbov1alpha1.ReasonInvalidSpec, `invalid spec: resource "app": references missing resource "db"`},
			reconciling:    condition{F, limbov1alpha1.ReasonInvalidSpec, ""},
			stalled:        condition{T, limbov1alpha1.ReasonInvalidSpec, `invalid spec: resource "app": references missing resource "db"`},
		},
		{
			name:           "a transient error is retried",
			pass:           &pass{resources: []limbov1alpha1.ResourceStatus{ready("db"), res("app", limbov1alpha1.ResourceError, limbov1alpha1.ReasonApplyFailed, "timeout")}},
			resourcesReady: "1/2",
			ready:          condition{F, limbov1alpha1.ReasonResourceError, `resource "app": timeout`},
			reconciling:    condition{T, limbov1alpha1.ReasonProgressingWithRetry, `resource "app": timeout`},
			stalled:        condition{F, limbov1alpha1.ReasonProgressingWithRetry, ""},
		},
		{
			name: "one error that needs a change stalls the Bundle",
			pass: &pass{resources: []limbov1alpha1.ResourceStatus{
				res("db", limbov1alpha1.ResourceError, limbov1alpha1.ReasonReadFailed, "timeout"),
				res("app", limbov1alpha1.ResourceError, limbov1alpha1.ReasonForbidden, "forbidden")}},
			resourcesReady: "0/2",
			ready:          condition{F, limbov1alpha1.ReasonResourceError, `resource "db": timeout; resource "app": forbidden`},
			reconciling:    condition{F, limbov1alpha1.ReasonResourceError, ""},
			stalled:        condition{T, limbov1alpha1.ReasonResourceError, `resource "db": timeout; resource "app": forbidden`},
		},
		{
			name: "errors before waiting resources",
			pass: &pass{resources: []limbov1alpha1.ResourceStatus{
				res("db", limbov1alpha1.ResourceInProgress, "", ""),
				res("app", limbov1alpha1.ResourceError, limbov1alpha1.ReasonPluginFailed, "down")}},
			resourcesReady: "0/2",
			ready:          condition{F, limbov1alpha1.ReasonResourceError, `resource "app": down`},
			reconciling:    condition{T, limbov1alpha1.ReasonProgressingWithRetry, ""},
			stalled:        condition{F, limbov1alpha1.ReasonProgressingWithRetry, ""},
		},
		{
			name:           "the empty-spec guard",
			pass:           &pass{emptyGuard: true},
			resourcesReady: "0/0",
			ready:          condition{F, limbov1alpha1.ReasonEmptyBundle, ""},
			reconciling:    condition{F, limbov1alpha1.ReasonEmptyBundle, ""},
			stalled:        condition{T, limbov1alpha1.ReasonEmptyBundle, ""},
		},
		{
			name: "waiting resources, in order",
			pass: &pass{resources: []limbov1alpha1.ResourceStatus{ready("db"),
				res("app", limbov1alpha1.ResourceInProgress, "", ""), res("web", limbov1alpha1.ResourceBlocked, "", "")}},
			resourcesReady: "1/3",
			ready:          condition{F, limbov1alpha1.ReasonProgressing, "waiting for app (InProgress), web (Blocked)"},
			reconciling:    condition{T, limbov1alpha1.ReasonProgressing, "waiting for app (InProgress), web (Blocked)"},
			stalled:        condition{F, limbov1alpha1.ReasonProgressing, ""},
		},
		{
			name:           "an orphan with an invalid deletion delay",
			pass:           &pass{resources: []limbov1alpha1.ResourceStatus{ready("db")}, pending: []limbov1alpha1.PendingDeletion{badDelay}},
			resourcesReady: "1/1",
			ready:          condition{F, limbov1alpha1.ReasonInvalidDeletionDelay, `orphans with an invalid deletion delay are never deleted: ConfigMap "old": ` + badDelay.Message},
			reconciling:    condition{F, limbov1alpha1.ReasonInvalidDeletionDelay, ""},
			stalled:        condition{T, limbov1alpha1.ReasonInvalidDeletionDelay, ""},
		},
		{
			name: "an orphan with a deadline does not hold Ready back",
			pass: &pass{resources: []limbov1alpha1.ResourceStatus{ready("db")},
				pending: []limbov1alpha1.PendingDeletion{{APIVersion: "v1", Kind: "ConfigMap", Name: "old", DeleteAfter: &metav1.Time{Time: time.Unix(100, 0)}}}},
			resourcesReady: "1/1",
			ready:          condition{T, limbov1alpha1.ReasonReady, "1 resource ready"},
			reconciling:    condition{F, limbov1alpha1.ReasonReady, ""},
			stalled:        condition{F, limbov1alpha1.ReasonReady, ""},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.pass
			if p == nil {
				p = &pass{}
			}
			p.bundle = &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Generation: 7}}
			st := p.status()
			if st.ResourcesReady != tc.resourcesReady {
				t.Errorf("resourcesReady = %q, want %q", st.ResourcesReady, tc.resourcesReady)
			}
			if st.ObservedGeneration != 7 {
				t.Errorf("observedGeneration = %d, want 7", st.ObservedGeneration)
			}
			for typ, want := range map[string]condition{limbov1alpha1.ConditionReady: tc.ready, limbov1alpha1.ConditionReconciling: tc.reconciling, limbov1alpha1.ConditionStalled: tc.stalled} {
				c := meta.FindStatusCondition(st.Conditions, typ)
				switch {
				case c == nil:
					t.Errorf("no %s condition", typ)
				case c.Status != want.status || c.Reason != want.reason || (want.message != "" && c.Message != want.message) || c.ObservedGeneration != 7:
					t.Errorf("%s = %s/%s %q (generation %d), want %s/%s %q", typ, c.Status, c.Reason, c.Message, c.ObservedGeneration, want.status, want.reason, want.message)
				}
			}
		})
	}
}

// Conditions other than the three a pass sets are kept from the last status.
func TestStatusKeepsOtherConditions(t *testing.T) {
	other := metav1.Condition{Type: limbov1alpha1.ConditionContentRemaining, Status: metav1.ConditionTrue, Reason: "SomeResourcesRemain"}
	p := pass{bundle: &limbov1alpha1.Bundle{Status: limbov1alpha1.BundleStatus{Conditions: []metav1.Condition{other}}}}
	if c := meta.FindStatusCondition(p.status().Conditions, other.Type); c == nil || c.Reason != other.Reason {
		t.Errorf("%s = %v, want it kept", other.Type, c)
	}
}

// pendingDeletions are sorted soonest first, entries without a deadline last,
// ties by kind and name; pendingDeletionCount and nextDeletion follow.
func TestSetPending(t *testing.T) {
	at := func(sec int64) *metav1.Time { return &metav1.Time{Time: time.Unix(sec, 0)} }
	pd := func(kind, name string, deleteAfter *metav1.Time) limbov1alpha1.PendingDeletion {
		return limbov1alpha1.PendingDeletion{APIVersion: "v1", Kind: kind, Name: name, DeleteAfter: deleteAfter}
	}
	for _, tc := range []struct {
		name      string
		pending   []limbov1alpha1.PendingDeletion
		wantOrder []string
		wantNext  *metav1.Time
	}{
		{name: "none"},
		{name: "soonest first", pending: []limbov1alpha1.PendingDeletion{pd("ConfigMap", "b", at(300)), pd("ConfigMap", "a", at(200))},
			wantOrder: []string{"ConfigMap/a", "ConfigMap/b"}, wantNext: at(200)},
		{name: "no deadline last", pending: []limbov1alpha1.PendingDeletion{pd("ConfigMap", "waiting", nil), pd("Secret", "due", at(100))},
			wantOrder: []string{"Secret/due", "ConfigMap/waiting"}, wantNext: at(100)},
		{name: "same deadline: by kind, then name", pending: []limbov1alpha1.PendingDeletion{pd("Secret", "a", at(100)), pd("ConfigMap", "b", at(100)), pd("ConfigMap", "a", at(100))},
			wantOrder: []string{"ConfigMap/a", "ConfigMap/b", "Secret/a"}, wantNext: at(100)},
		{name: "no deadline at all: no nextDeletion", pending: []limbov1alpha1.PendingDeletion{pd("Secret", "b", nil), pd("ConfigMap", "z", nil)},
			wantOrder: []string{"ConfigMap/z", "Secret/b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := limbov1alpha1.BundleStatus{NextDeletion: at(1)} // stale
			input := append([]limbov1alpha1.PendingDeletion(nil), tc.pending...)
			setPending(&st, input)
			var order []string
			for _, p := range st.PendingDeletions {
				order = append(order, p.Kind+"/"+p.Name)
			}
			if !reflect.DeepEqual(order, tc.wantOrder) {
				t.Errorf("order = %v, want %v", order, tc.wantOrder)
			}
			if int(st.PendingDeletionCount) != len(tc.pending) {
				t.Errorf("pendingDeletionCount = %d, want %d", st.PendingDeletionCount, len(tc.pending))
			}
			if !reflect.DeepEqual(st.NextDeletion, tc.wantNext) {
				t.Errorf("nextDeletion = %v, want %v", st.NextDeletion, tc.wantNext)
			}
			if !reflect.DeepEqual(input, tc.pending) {
				t.Error("setPending reordered its input")
			}
		})
	}
}

// Entries alike in kind, name and deadline (a PVC of one name in two namespaces
// or two clusters) are listed in one order whatever order they came in: the
// same entries make the same status.
func TestSetPendingOrdersAlikeEntries(t *testing.T) {
	at := &metav1.Time{Time: time.Unix(100, 0)}
	pvc := func(namespace, cluster string) limbov1alpha1.PendingDeletion {
		return limbov1alpha1.PendingDeletion{APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: namespace, Name: "data", Cluster: cluster, DeleteAfter: at}
	}
	entries := []limbov1alpha1.PendingDeletion{pvc("b", ""), pvc("a", "workload"), pvc("a", "")}
	var first []limbov1alpha1.PendingDeletion
	for _, order := range [][]int{{0, 1, 2}, {2, 1, 0}, {1, 0, 2}, {1, 2, 0}} {
		var input []limbov1alpha1.PendingDeletion
		for _, i := range order {
			input = append(input, entries[i])
		}
		var st limbov1alpha1.BundleStatus
		setPending(&st, input)
		if first == nil {
			first = st.PendingDeletions
			continue
		}
		if !reflect.DeepEqual(st.PendingDeletions, first) {
			t.Errorf("input order %v: listed %v, want %v", order, st.PendingDeletions, first)
		}
	}
}

// Past MaxPendingDeletionsListed entries, the status lists the soonest and
// counts them all (a status of thousands could not be written); a pass that
// keeps the previous status's entries (a spec error, a failed listing) keeps it
// cut: its count, and the kinds of what it left out.
func TestPendingDeletionsCut(t *testing.T) {
	const n = limbov1alpha1.MaxPendingDeletionsListed + 5
	base := time.Unix(1_800_000_000, 0)
	var pending []limbov1alpha1.PendingDeletion
	for i := range n {
		at := metav1.NewTime(base.Add(time.Duration(n-i) * time.Second)) // latest first
		pending = append(pending, limbov1alpha1.PendingDeletion{APIVersion: "v1", Kind: "ConfigMap", Name: fmt.Sprintf("cm-%04d", i), DeleteAfter: &at})
	}
	var st limbov1alpha1.BundleStatus
	setPending(&st, pending)
	if len(st.PendingDeletions) != limbov1alpha1.MaxPendingDeletionsListed || st.PendingDeletionCount != n || !st.PendingDeletionsCut() {
		t.Fatalf("%d listed, count %d, cut %v; want %d listed of %d, cut", len(st.PendingDeletions), st.PendingDeletionCount, st.PendingDeletionsCut(), limbov1alpha1.MaxPendingDeletionsListed, n)
	}
	if first, last := st.PendingDeletions[0], st.PendingDeletions[len(st.PendingDeletions)-1]; first.Name != fmt.Sprintf("cm-%04d", n-1) || last.Name != "cm-0005" || !st.NextDeletion.Equal(first.DeleteAfter) {
		t.Errorf("listed %s … %s, next %v; want the soonest, cm-%04d … cm-0005", first.Name, last.Name, st.NextDeletion, n-1)
	}

	// A listed entry's message is bounded (a Tombstone's carries up to 8 KiB of
	// an endpoint's error); what setPending was given is not changed.
	long := strings.Repeat("x", 8<<10)
	pending[n-1].Message = long
	setPending(&st, pending)
	if got := st.PendingDeletions[0].Message; len(got) > limbov1alpha1.MaxPendingDeletionMessage || !strings.HasPrefix(got, "xxx") {
		t.Errorf("the listed message is %d bytes, want at most %d", len(got), limbov1alpha1.MaxPendingDeletionMessage)
	}
	if pending[n-1].Message != long {
		t.Error("setPending changed its input's message")
	}

	// Cut in the middle: what the entry's readers match at either end stays
	// (PendingDeletion.Held and InvalidDelay, kubectl limbo pending). A
	// Tombstone's held entry ends with the hold after its last error; its
	// invalid delay comes after its item's name (an endpoint of up to 2 KiB).
	for _, tc := range []struct {
		message string
		check   func(limbov1alpha1.PendingDeletion) bool
	}{
		{`NeutronRoute "r": attempt 3 failed: ` + long + limbov1alpha1.PendingMessageHeld + limbov1alpha1.PendingMessageWaitingForReady,
			func(e limbov1alpha1.PendingDeletion) bool { return e.Held() }},
		{"StorageOSNamespace " + strings.Repeat("h", 2<<10) + `: invalid limbo.dev/deletionDelay "1d": not a duration (Go syntax: 10m, 24h, 1h30m); never deleted until fixed`,
			func(e limbov1alpha1.PendingDeletion) bool { return e.InvalidDelay() }},
	} {
		in := []limbov1alpha1.PendingDeletion{{APIVersion: "v1", Kind: "ConfigMap", Name: "one", Message: tc.message}}
		if !tc.check(in[0]) {
			t.Fatalf("the uncut entry does not match: %.80q", tc.message)
		}
		var one limbov1alpha1.BundleStatus
		setPending(&one, in)
		if got := one.PendingDeletions[0]; len(got.Message) > limbov1alpha1.MaxPendingDeletionMessage || !tc.check(got) || got.Message[:10] != tc.message[:10] {
			t.Errorf("cut to %d bytes, the entry no longer says what it did: %q", len(got.Message), got.Message)
		}
	}

	secret := limbov1alpha1.ManagedKind{APIVersion: "v1", Kind: "Secret"} // the kind of an entry left out
	p := &pass{kinds: map[schema.GroupVersionKind]bool{}, bundle: &limbov1alpha1.Bundle{Status: st}}
	p.bundle.Status.ManagedKinds = []limbov1alpha1.ManagedKind{{APIVersion: "v1", Kind: "ConfigMap"}, secret}
	p.keepPreviousPending()
	kept := p.status()
	if len(kept.PendingDeletions) != limbov1alpha1.MaxPendingDeletionsListed || kept.PendingDeletionCount != n {
		t.Errorf("kept: %d listed, count %d; want the previous %d of %d", len(kept.PendingDeletions), kept.PendingDeletionCount, limbov1alpha1.MaxPendingDeletionsListed, n)
	}
	if !slices.Contains(kept.ManagedKinds, secret) {
		t.Errorf("kept: managedKinds %v lost %v", kept.ManagedKinds, secret)
	}

	// A pass that judged some (its orphans) and kept the rest (its plugin items
	// could not be listed), again and again: the count stays that of the last
	// judged status, not grown by what the pass produced itself.
	cur := &limbov1alpha1.Bundle{Status: st}
	for round := range 3 {
		p := &pass{kinds: map[schema.GroupVersionKind]bool{}, bundle: cur, pending: pending[:n-3]}
		p.keepPreviousPending()
		next := p.status()
		if next.PendingDeletionCount != n {
			t.Fatalf("round %d: count %d, want %d", round, next.PendingDeletionCount, n)
		}
		cur = &limbov1alpha1.Bundle{Status: next}
	}
}

// managedKinds records the pass's kinds, those of what is pending in this
// cluster and the kinds kept (the API server could not tell), sorted (core group
// first), without Tombstones; a pass stopped by spec errors keeps the last record.
func TestManagedKinds(t *testing.T) {
	previous := []limbov1alpha1.ManagedKind{{APIVersion: "v1", Kind: "Secret"}}
	deployment := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	configMap := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	for _, tc := range []struct {
		name string
		pass *pass
		want []limbov1alpha1.ManagedKind
	}{
		{name: "the pass's kinds and the pending ones",
			pass: &pass{kinds: map[schema.GroupVersionKind]bool{deployment: true, configMap: true},
				pending: []limbov1alpha1.PendingDeletion{
					{APIVersion: "v1", Kind: "Service", Name: "old"},
					{APIVersion: limbov1alpha1.TombstoneGVK.GroupVersion().String(), Kind: limbov1alpha1.TombstoneGVK.Kind, Name: "ts"},
					// deorbit's, in the cluster it tears down: not a kind of this one
					{APIVersion: "snapshot.storage.k8s.io/v1", Kind: "VolumeSnapshot", Name: "snap", Cluster: "https://10.1.2.3:6443"},
				}, keptKinds: []schema.GroupVersionKind{{Group: "example.com", Version: "v1", Kind: "Widget"}}},
			want: []limbov1alpha1.ManagedKind{{APIVersion: "v1", Kind: "ConfigMap"}, {APIVersion: "v1", Kind: "Service"}, {APIVersion: "apps/v1", Kind: "Deployment"}, {APIVersion: "example.com/v1", Kind: "Widget"}}},
		{name: "nothing", pass: &pass{kinds: map[schema.GroupVersionKind]bool{}}},
		{name: "spec errors keep the last record",
			pass: &pass{kinds: map[schema.GroupVersionKind]bool{configMap: true}, specErrs: bundlespec.Errors{{Resource: "a", Reason: limbov1alpha1.ReasonInvalidObject}}},
			want: previous},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.pass
			if p == nil {
				p = &pass{}
			}
			p.bundle = &limbov1alpha1.Bundle{Status: limbov1alpha1.BundleStatus{ManagedKinds: previous}}
			if got := p.managedKinds(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("managedKinds = %v, want %v", got, tc.want)
			}
		})
	}
}

// The resources' messages are bounded one by one and together: each at most
// MessageBudget, all of them within resourceMessagesBudget (a share each), and
// none cut below minResourceMessage.
func TestBoundResourceMessages(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	for _, tc := range []struct {
		name      string
		n         int
		message   string
		wantEach  int // the longest message kept, in bytes
		wantShort bool
	}{
		{name: "short messages are kept whole", n: 3, message: "not ready", wantEach: len("not ready"), wantShort: true},
		{name: "a few long ones: MessageBudget each", n: 2, message: long, wantEach: bundlespec.MessageBudget},
		{name: "many long ones: a share of the budget each", n: 200, message: long, wantEach: resourceMessagesBudget / 200},
		{name: "very many: never below the floor", n: 5000, message: long, wantEach: minResourceMessage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			statuses := make([]limbov1alpha1.ResourceStatus, tc.n)
			for i := range statuses {
				statuses[i] = limbov1alpha1.ResourceStatus{Name: fmt.Sprint("r", i), Message: tc.message}
			}
			boundResourceMessages(statuses)
			for _, st := range statuses {
				if len(st.Message) > tc.wantEach {
					t.Fatalf("%s: a message of %d bytes, want at most %d", st.Name, len(st.Message), tc.wantEach)
				}
				if tc.wantShort && st.Message != tc.message {
					t.Fatalf("%s: %q, want it whole", st.Name, st.Message)
				}
				if !tc.wantShort && (len(st.Message) < tc.wantEach-8 || !strings.HasSuffix(st.Message, "…")) {
					t.Fatalf("%s: %d bytes ending %q, want about %d, cut with …", st.Name, len(st.Message), st.Message[max(0, len(st.Message)-8):], tc.wantEach)
				}
			}
		})
	}
}

// The digests of the objects found applied (appliedDigest) follow their
// resourceVersions: they are written with a status that changed anyway, never
// as its only change (a no-op pass writes nothing); a resource whose pass found
// no digest keeps the one last written for the same object.
func TestSettleAppliedDigests(t *testing.T) {
	res := func(name, uid, digest string, state limbov1alpha1.ResourceState) limbov1alpha1.ResourceStatus {
		return limbov1alpha1.ResourceStatus{Name: name, State: state, AppliedDigest: digest,
			Object: &limbov1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Name: name, UID: uid}}
	}
	ready, waiting := limbov1alpha1.ResourceReady, limbov1alpha1.ResourceInProgress
	last := limbov1alpha1.BundleStatus{ObservedGeneration: 1, ResourcesReady: "2/2", Resources: []limbov1alpha1.ResourceStatus{
		res("a", "ua", "a1", ready), res("b", "ub", "b1", ready),
	}}
	cases := []struct {
		name string
		next limbov1alpha1.BundleStatus
		want []string // the digests of next after settling
	}{
		{"only digests changed: the last written stay", limbov1alpha1.BundleStatus{ObservedGeneration: 1, ResourcesReady: "2/2", Resources: []limbov1alpha1.ResourceStatus{
			res("a", "ua", "a2", ready), res("b", "ub", "", ready),
		}}, []string{"a1", "b1"}},
		{"the status changed: fresh digests, the last for a resource that found none", limbov1alpha1.BundleStatus{ObservedGeneration: 2, ResourcesReady: "2/2", Resources: []limbov1alpha1.ResourceStatus{
			res("a", "ua", "a2", ready), res("b", "ub", "", ready),
		}}, []string{"a2", "b1"}},
		{"another object of the name keeps no digest of the last", limbov1alpha1.BundleStatus{ObservedGeneration: 1, ResourcesReady: "1/2", Resources: []limbov1alpha1.ResourceStatus{
			res("a", "ua", "", ready), res("b", "ub2", "", waiting),
		}}, []string{"a1", ""}},
		{"a resource new to the status", limbov1alpha1.BundleStatus{ObservedGeneration: 2, ResourcesReady: "3/3", Resources: []limbov1alpha1.ResourceStatus{
			res("a", "ua", "", ready), res("b", "ub", "b1", ready), res("c", "uc", "c1", ready),
		}}, []string{"a1", "b1", "c1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			settleAppliedDigests(&last, &tc.next)
			var got []string
			for _, r := range tc.next.Resources {
				got = append(got, r.AppliedDigest)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("digests = %q, want %q", got, tc.want)
			}
		})
	}
}
