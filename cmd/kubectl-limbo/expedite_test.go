package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

func TestExpedite(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: inLimbo("team-a", "db-config", "shop", "24h", stampAgo(time.Hour))}
	f := newFixture(t, nil, cm)

	code, out, errOut := f.run("expedite", "configmap/db-config", "-n", "team-a")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	// The old stamp (an hour ago, before now) - 24h: the deadline is when the
	// countdown started.
	const stamp = "2026-02-28T11:00:00Z"
	if want := "configmap/db-config expedited: limbo.dev/deletionTimestamp set to " + stamp +
		" (delay 24h0m0s), deadline 2026-03-01T11:00:00Z: due now; the controller deletes it at its next pass unless something holds it (kubectl limbo pending shows what)\n"; out != want {
		t.Errorf("stdout %q, want %q", out, want)
	}
	if stamp != softdelete.ExpediteStamp(testNow.Add(-time.Hour), 24*time.Hour) {
		t.Fatalf("test stamp differs from softdelete.ExpediteStamp")
	}

	var got corev1.ConfigMap
	if err := f.client.Get(context.Background(), client.ObjectKeyFromObject(cm), &got); err != nil {
		t.Fatal(err)
	}
	if got.Annotations[limbov1alpha1.AnnotationDeletionTimestamp] != stamp {
		t.Errorf("stamp %q, want %q", got.Annotations[limbov1alpha1.AnnotationDeletionTimestamp], stamp)
	}
	if got.Annotations[limbov1alpha1.AnnotationDeletionDelay] != "24h" || got.Labels[limbov1alpha1.LabelPendingDeletion] != "true" {
		t.Errorf("other metadata changed: %v %v", got.Annotations, got.Labels)
	}
	// The engine now deletes it.
	if d := softdelete.Decide(testNow, softdelete.State{Annotations: got.Annotations, PendingLabel: true}); d.Action != softdelete.ActionDelete {
		t.Errorf("Decide after expedite: %s, want Delete", d.Action)
	}
}

// A copy of an object in limbo (restored from a backup taken during its
// countdown) keeps its original's deadline while that deadline comes after
// the copy was made; expedited, its deadline went back to its original's
// stamp, before the copy was made — which the controller takes for a copy's
// old countdown and restarts: expedite postponed the deletion by a whole
// delay. The deadline goes no earlier than the copy's creation (less the
// clocks' slack) now.
func TestExpediteACopy(t *testing.T) {
	for _, delay := range []string{"24h", "24h0.5s"} { // a stamp is whole seconds; a delay need not be
		t.Run(delay, func(t *testing.T) { expediteACopy(t, delay) })
	}
}

func expediteACopy(t *testing.T, delay string) {
	meta := inLimbo("team-a", "restored", "shop", delay, stampAgo(3*time.Hour))
	meta.CreationTimestamp = metav1.NewTime(testNow.Add(-time.Hour))
	cm := &corev1.ConfigMap{ObjectMeta: meta}
	f := newFixture(t, nil, cm)
	if code, _, errOut := f.run("expedite", "configmap/restored", "-n", "team-a"); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var got corev1.ConfigMap
	if err := f.client.Get(context.Background(), client.ObjectKeyFromObject(cm), &got); err != nil {
		t.Fatal(err)
	}
	if d := softdelete.Decide(testNow, softdelete.StateOf(&got, false)); d.Action != softdelete.ActionDelete {
		t.Errorf("Decide after expedite: %s (%v), want Delete", d.Action, d.Err)
	}
}

func TestExpediteKinds(t *testing.T) {
	tomb := &limbov1alpha1.Tombstone{ObjectMeta: inLimbo("team-a", "storage-ns-gc-4f7c", "shop", "10m", stampAgo(time.Minute))}
	deploy := &appsv1.Deployment{ObjectMeta: inLimbo("team-a", "app", "shop", "90s", stampAgo(time.Second))}
	f := newFixture(t, nil, tomb, deploy)

	for _, tc := range []struct {
		args  []string
		obj   client.Object
		ref   string
		stamp string
	}{
		{[]string{"tombstone/storage-ns-gc-4f7c"}, tomb, "tombstone.limbo.dev/storage-ns-gc-4f7c", "2026-03-01T11:49:00Z"},
		{[]string{"deployments.apps/app"}, deploy, "deployment.apps/app", "2026-03-01T11:58:29Z"},
		// Expedited again: the stamp is the earlier one already.
		{[]string{"Deployment.apps", "app"}, deploy, "deployment.apps/app", "2026-03-01T11:56:59Z"},
	} {
		args := append([]string{"expedite", "-n", "team-a"}, tc.args...)
		code, out, errOut := f.run(args...)
		if code != 0 || !strings.HasPrefix(out, tc.ref+" expedited: limbo.dev/deletionTimestamp set to "+tc.stamp) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", tc.args, code, out, errOut)
			continue
		}
		obj := tc.obj.DeepCopyObject().(client.Object)
		if err := f.client.Get(context.Background(), client.ObjectKeyFromObject(tc.obj), obj); err != nil {
			t.Fatal(err)
		}
		if got := obj.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp]; got != tc.stamp {
			t.Errorf("%v: stamp %q, want %q", tc.args, got, tc.stamp)
		}
	}
}

func TestExpediteRefuses(t *testing.T) {
	notInLimbo := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "kept",
		Annotations: map[string]string{limbov1alpha1.AnnotationDeletionDelay: "24h"}}}
	invalid := &corev1.ConfigMap{ObjectMeta: inLimbo("team-a", "invalid", "shop", "soon", stampAgo(time.Hour))}
	noDelay := &corev1.ConfigMap{ObjectMeta: inLimbo("team-a", "nodelay", "shop", "", stampAgo(time.Hour))}
	// An orphan with an invalid delay is never stamped: `pending` lists it as
	// never deleted, and expedite says why.
	unstamped := &corev1.ConfigMap{ObjectMeta: inLimbo("team-a", "unstamped", "shop", "soon", "")}
	// A teardown releases an object without a delay (to an adopter) unstamped:
	// it is in limbo, labelled, and deleted as soon as the reaper sees it.
	releasedMeta := inLimbo("team-a", "released-nodelay", "a", "", "")
	releasedMeta = releasedBy(releasedMeta, stampAgo(time.Minute))
	releasedNoDelay := &corev1.ConfigMap{ObjectMeta: releasedMeta}
	// Released, neither stamped nor labelled pending-deletion: the released
	// mark alone puts it in limbo.
	releasedOnlyMeta := inLimbo("team-a", "released-only", "a", "", "")
	releasedOnlyMeta = releasedBy(releasedOnlyMeta, stampAgo(time.Minute))
	delete(releasedOnlyMeta.Labels, limbov1alpha1.LabelPendingDeletion)
	releasedOnly := &corev1.ConfigMap{ObjectMeta: releasedOnlyMeta}
	labelledUnstamped := &corev1.ConfigMap{ObjectMeta: inLimbo("team-a", "labelled-unstamped", "shop", "1h", "")}
	// Already being deleted, held by a finalizer: nothing to hasten.
	terminatingMeta := inLimbo("team-a", "terminating", "shop", "1h", stampAgo(2*time.Hour))
	terminatingMeta.Finalizers = []string{"example.com/in-use"}
	terminatingMeta.DeletionTimestamp = &metav1.Time{Time: testNow.Add(-time.Minute)}
	terminating := &corev1.ConfigMap{ObjectMeta: terminatingMeta}
	// Its controller declares it again (re-added): the Bundle's next pass takes
	// it out of limbo, cancelling the countdown expedite would end.
	declaredAgainMeta := inLimbo("team-a", "declared-again", "shop", "24h", stampAgo(time.Hour))
	declaredAgainMeta.OwnerReferences = []metav1.OwnerReference{bundleOwner("shop", true)}
	declaredAgain := &corev1.ConfigMap{ObjectMeta: declaredAgainMeta}
	f := newFixture(t, nil, notInLimbo, invalid, noDelay, unstamped, releasedNoDelay, releasedOnly, labelledUnstamped, terminating,
		declaredAgain, shopDeclaring(t, []string{"declared-again"}))

	for name, want := range map[string]string{
		"configmap/kept":             "error: configmap/kept is not in limbo: it has no limbo.dev/deletionTimestamp annotation, so no deletion is scheduled\n",
		"configmap/invalid":          `error: cannot expedite configmap/invalid: invalid limbo.dev/deletionDelay "soon": not a duration (Go syntax: 10m, 24h, 1h30m); an object with an invalid delay is never deleted by the controller: fix the annotation, or kubectl delete it` + "\n",
		"configmap/unstamped":        `error: cannot expedite configmap/unstamped: invalid limbo.dev/deletionDelay "soon": not a duration (Go syntax: 10m, 24h, 1h30m); an object with an invalid delay is never deleted by the controller: fix the annotation, or kubectl delete it` + "\n",
		"configmap/nodelay":          "error: cannot expedite configmap/nodelay: it has no limbo.dev/deletionDelay annotation, so it is deleted without delay as soon as the controller sees it\n",
		"configmap/released-nodelay": "error: cannot expedite configmap/released-nodelay: it has no limbo.dev/deletionDelay annotation, so it is deleted without delay as soon as the controller sees it\n",
		"configmap/released-only":    "error: cannot expedite configmap/released-only: it has no limbo.dev/deletionDelay annotation, so it is deleted without delay as soon as the controller sees it\n",
		"configmap/labelled-unstamped": "error: cannot expedite configmap/labelled-unstamped: it is labelled limbo.dev/pending-deletion but has no limbo.dev/deletionTimestamp annotation yet: " +
			"its countdown starts when the controller stamps it\n",
		"configmap/terminating": "error: cannot expedite configmap/terminating: it is already being deleted (since 2026-03-01T11:59:00Z); held by finalizers: example.com/in-use; " +
			"expedite cannot hasten it: the API server deletes it once its finalizers are removed\n",
		"configmap/declared-again": "error: cannot expedite configmap/declared-again: its controller, Bundle team-a/shop, declares it again: its next pass takes it out of limbo, which cancels the countdown; " +
			"to have it deleted, remove it from the Bundle's spec (then expedite it once it is stamped again), or kubectl delete it\n",
		"configmap/missing": "error: configmaps \"missing\" not found\n",
		"gizmo/x":           "error: the server doesn't have a resource type \"gizmo\"\n",
		"configmap":         "error: resource(s) were provided, but no name was specified\n",
	} {
		code, out, errOut := f.run("expedite", "-n", "team-a", name)
		if code != 1 || out != "" || errOut != want {
			t.Errorf("%s: exit %d, stdout %q, stderr\n%s\nwant\n%s", name, code, out, errOut, want)
		}
	}

	// Nothing was written.
	for _, obj := range []client.Object{notInLimbo, invalid, noDelay, unstamped, releasedNoDelay, releasedOnly, labelledUnstamped, terminating, declaredAgain} {
		var got corev1.ConfigMap
		if err := f.client.Get(context.Background(), client.ObjectKeyFromObject(obj), &got); err != nil {
			t.Fatal(err)
		}
		if got.ResourceVersion != "999" {
			t.Errorf("%s was written: resourceVersion %s", obj.GetName(), got.ResourceVersion)
		}
	}
}

// TestExpediteConflict checks that a change between read and patch is not
// overwritten: the patch carries the resourceVersion read, fails, and is redone
// after a fresh read.
func TestExpediteConflict(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: inLimbo("team-a", "db-config", "shop", "24h", stampAgo(time.Hour))}
	// Someone changes the delay after our read.
	funcs, patches := changedBeforeFirstPatch(func(live *corev1.ConfigMap) { live.Annotations[limbov1alpha1.AnnotationDeletionDelay] = "1h" })
	f := newFixture(t, funcs, cm)
	code, out, errOut := f.run("expedite", "-n", "team-a", "configmap/db-config")
	if code != 0 || *patches != 2 {
		t.Fatalf("exit %d, %d patches, stdout %q, stderr %q", code, *patches, out, errOut)
	}
	var got corev1.ConfigMap
	if err := f.client.Get(context.Background(), client.ObjectKeyFromObject(cm), &got); err != nil {
		t.Fatal(err)
	}
	// The new delay (1h) was used.
	if want := "2026-03-01T10:00:00Z"; got.Annotations[limbov1alpha1.AnnotationDeletionTimestamp] != want {
		t.Errorf("stamp %q, want %q", got.Annotations[limbov1alpha1.AnnotationDeletionTimestamp], want)
	}
}

// The deadline is now, but something may hold the deletion: expedite says so,
// and prints what the object's Bundle reports of it (its status.pendingDeletions
// entry), if anything.
func TestExpediteHeld(t *testing.T) {
	const due = ": due now; the controller deletes it at its next pass unless something holds it (kubectl limbo pending shows what)\n"
	entry := func(kind, namespace, name, message string) limbov1alpha1.PendingDeletion {
		return limbov1alpha1.PendingDeletion{APIVersion: "v1", Kind: kind, Namespace: namespace, Name: name, Message: message}
	}
	withOwner := func(m metav1.ObjectMeta) metav1.ObjectMeta {
		m.OwnerReferences = []metav1.OwnerReference{bundleOwner("shop", true)}
		return m
	}
	shop := &limbov1alpha1.Bundle{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "shop", UID: uid("shop")},
		Status: limbov1alpha1.BundleStatus{PendingDeletions: []limbov1alpha1.PendingDeletion{
			entry("ConfigMap", "team-a", "held", "waiting for every resource of the Bundle to be Ready"),
			// The same name in another cluster is another object.
			{APIVersion: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "running", Cluster: "workload-kubeconfig", Message: "deleting"},
			entry("ConfigMap", "team-a", "running", ""),
			{APIVersion: limbov1alpha1.GroupVersion.String(), Kind: "Tombstone", Namespace: "team-a", Name: "storage-ns-gc-4f7c", Message: `StorageOSNamespace "old-team"`},
		}},
	}
	nodes := &limbov1alpha1.Bundle{
		ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "nodes", UID: uid("nodes")},
		Status: limbov1alpha1.BundleStatus{PendingDeletions: []limbov1alpha1.PendingDeletion{
			entry("ConfigMap", "team-a", "worker-1-volume", "due; held: the node is still cordoned"),
		}},
	}
	// A Bundle whose spec is invalid decides nothing: its entry of the last
	// pass says nothing, the Bundle's condition does.
	broken := &limbov1alpha1.Bundle{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "broken", UID: uid("broken")},
		Status: limbov1alpha1.BundleStatus{
			Conditions:       []metav1.Condition{{Type: limbov1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: limbov1alpha1.ReasonInvalidSpec}},
			PendingDeletions: []limbov1alpha1.PendingDeletion{entry("ConfigMap", "team-a", "frozen", "")},
		},
	}
	// A Bundle being torn down decides by none of its last pass's holds.
	torn := &limbov1alpha1.Bundle{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "torn", UID: uid("torn"),
			DeletionTimestamp: &metav1.Time{Time: testNow}, Finalizers: []string{limbov1alpha1.FinalizerTeardown}},
		Status: limbov1alpha1.BundleStatus{PendingDeletions: []limbov1alpha1.PendingDeletion{
			entry("ConfigMap", "team-a", "held-torn", limbov1alpha1.PendingMessageWaitingForReady),
		}},
	}
	frozen := inLimbo("team-a", "frozen", "broken", "1h", stampAgo(time.Minute))
	frozen.OwnerReferences = []metav1.OwnerReference{bundleOwner("broken", true)}
	pluginItem := inLimbo("team-a", "worker-1-volume", "", "1h", stampAgo(time.Minute))
	delete(pluginItem.Labels, limbov1alpha1.LabelBundle)
	pluginItem.Annotations[limbov1alpha1.AnnotationPluginResource] = "infra/nodes/node-removal"
	objs := []client.Object{
		shop, nodes, broken, torn, &corev1.ConfigMap{ObjectMeta: frozen},
		&corev1.ConfigMap{ObjectMeta: inLimbo("team-a", "held-torn", "torn", "1h", stampAgo(time.Minute))},
		&corev1.ConfigMap{ObjectMeta: withOwner(inLimbo("team-a", "held", "shop", "1h", stampAgo(time.Minute)))},
		&corev1.ConfigMap{ObjectMeta: withOwner(inLimbo("team-a", "running", "shop", "1h", stampAgo(time.Minute)))},
		// Released by a teardown: no owner, the label names the Bundle.
		&corev1.ConfigMap{ObjectMeta: releasedBy(inLimbo("team-a", "released", "shop", "1h", stampAgo(time.Minute)), stampAgo(time.Minute))},
		&corev1.ConfigMap{ObjectMeta: inLimbo("team-a", "unknown-bundle", "gone", "1h", stampAgo(time.Minute))},
		&corev1.ConfigMap{ObjectMeta: pluginItem},
		&limbov1alpha1.Tombstone{ObjectMeta: inLimbo("team-a", "storage-ns-gc-4f7c", "shop", "10m", stampAgo(time.Minute))},
	}
	for _, tc := range []struct {
		ref, stamp, delay string
		report            string
	}{
		{"configmap/held", "2026-03-01T10:59:00Z", "1h0m0s", "Bundle team-a/shop reports: waiting for every resource of the Bundle to be Ready\n"},
		{"configmap/running", "2026-03-01T10:59:00Z", "1h0m0s", ""},
		{"configmap/frozen", "2026-03-01T10:59:00Z", "1h0m0s", "Bundle team-a/broken reports: not deleted while the Bundle's spec is invalid (see its Stalled condition)\n"},
		{"configmap/held-torn", "2026-03-01T10:59:00Z", "1h0m0s", ""},
		{"configmap/released", "2026-03-01T10:59:00Z", "1h0m0s", ""},
		{"configmap/unknown-bundle", "2026-03-01T10:59:00Z", "1h0m0s", ""},
		{"configmap/worker-1-volume", "2026-03-01T10:59:00Z", "1h0m0s", "Bundle infra/nodes reports: due; held: the node is still cordoned\n"},
		// A Tombstone's entry names its item; that is no news.
		{"tombstone.limbo.dev/storage-ns-gc-4f7c", "2026-03-01T11:49:00Z", "10m0s", ""},
	} {
		f := newFixture(t, nil, objs...)
		code, out, errOut := f.run("expedite", "-n", "team-a", tc.ref)
		// Stamped a minute ago: the deadline is that stamp.
		want := fmt.Sprintf("%s expedited: limbo.dev/deletionTimestamp set to %s (delay %s), deadline 2026-03-01T11:59:00Z%s%s", tc.ref, tc.stamp, tc.delay, due, tc.report)
		if code != 0 || out != want || errOut != "" {
			t.Errorf("%s: exit %d, stderr %q, stdout\n%s\nwant\n%s", tc.ref, code, errOut, out, want)
		}
	}

	// A Bundle that cannot be read only means there is nothing more to say.
	f := newFixture(t, &interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if _, ok := obj.(*limbov1alpha1.Bundle); ok {
			return apierrors.NewForbidden(schema.GroupResource{Group: "limbo.dev", Resource: "bundles"}, key.Name, errors.New("no"))
		}
		return c.Get(ctx, key, obj, opts...)
	}}, objs...)
	code, out, errOut := f.run("expedite", "-n", "team-a", "configmap/held")
	if want := "configmap/held expedited: limbo.dev/deletionTimestamp set to 2026-03-01T10:59:00Z (delay 1h0m0s), deadline 2026-03-01T11:59:00Z" + due; code != 0 || out != want || errOut != "" {
		t.Errorf("Bundle forbidden: exit %d, stderr %q, stdout\n%s\nwant\n%s", code, errOut, out, want)
	}
}

// A machine whose clock is ahead of the controller's cannot postpone the
// deletion: the new stamp is the earlier of now and the old stamp, which the
// controller's clock wrote, minus the delay, so the deadline has come by the
// controller's clock too.
func TestExpediteClockAhead(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ahead     time.Duration // the plugin's clock - the controller's
		stamp     string        // written by the controller, at its now
		wantStamp string
	}{
		{name: "ten minutes ahead", ahead: 10 * time.Minute, stamp: stampAgo(0), wantStamp: "2026-03-01T11:00:00Z"},
		{name: "ten minutes ahead, stamped a day ago", ahead: 10 * time.Minute, stamp: stampAgo(24 * time.Hour), wantStamp: "2026-02-28T11:00:00Z"},
		// Behind: now is the earlier.
		{name: "ten minutes behind", ahead: -10 * time.Minute, stamp: stampAgo(0), wantStamp: "2026-03-01T10:50:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cm := &corev1.ConfigMap{ObjectMeta: inLimbo("team-a", "db-config", "shop", "1h", tc.stamp)}
			f := newFixture(t, nil, cm)
			code, out, errOut := f.runAt(testNow.Add(tc.ahead), "expedite", "-n", "team-a", "configmap/db-config")
			if code != 0 || errOut != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			var got corev1.ConfigMap
			if err := f.client.Get(context.Background(), client.ObjectKeyFromObject(cm), &got); err != nil {
				t.Fatal(err)
			}
			if stamp := got.Annotations[limbov1alpha1.AnnotationDeletionTimestamp]; stamp != tc.wantStamp {
				t.Errorf("stamp %q, want %q", stamp, tc.wantStamp)
			}
			// The controller, whose clock read the old stamp when it wrote it,
			// deletes it from then on.
			original, err := time.Parse(time.RFC3339, tc.stamp)
			if err != nil {
				t.Fatal(err)
			}
			for _, now := range []time.Time{original, testNow} {
				if d := softdelete.Decide(now, softdelete.StateOf(&got, false)); d.Action != softdelete.ActionDelete {
					t.Errorf("Decide at %s (controller's clock) after expedite: %s, deadline %s; want Delete", now.Format(time.RFC3339), d.Action, d.Deadline)
				}
			}
		})
	}
}

// expedite says when the reaper holds a released object it expedites, or
// refuses for lack of a delay, for a Bundle of its namespace that declares it
// (the reaper's decision: see releasedHold): deleting it is that Bundle's to
// decide. When the Bundles cannot be read, its refusal points at pending.
func TestExpediteReleasedHeld(t *testing.T) {
	released := func(name, delay, stamp string) *corev1.ConfigMap {
		m := inLimbo("team-a", name, "gone", delay, stamp)
		m = releasedBy(m, stampAgo(time.Hour))
		return &corev1.ConfigMap{ObjectMeta: m}
	}
	adopter := adoptingBundle(t, "b", "moved", "nodelay")
	const due = ": due now; the controller deletes it at its next pass unless something holds it (kubectl limbo pending shows what)\n"
	const held = "Bundle b declares it to adopt it (limbo.dev/adopt); deleted only once no Bundle does"
	for _, tc := range []struct {
		name    string
		ref     string
		forbid  bool
		wantOut string
		wantErr string
	}{
		{name: "expedited", ref: "configmap/moved",
			wantOut: "configmap/moved expedited: limbo.dev/deletionTimestamp set to 2026-03-01T10:00:00Z (delay 1h0m0s), deadline 2026-03-01T11:00:00Z" + due +
				"The reaper holds it: " + held + "\n"},
		{name: "not declared", ref: "configmap/other",
			wantOut: "configmap/other expedited: limbo.dev/deletionTimestamp set to 2026-03-01T10:00:00Z (delay 1h0m0s), deadline 2026-03-01T11:00:00Z" + due},
		{name: "expedited, Bundles unreadable", ref: "configmap/moved", forbid: true,
			wantOut: "configmap/moved expedited: limbo.dev/deletionTimestamp set to 2026-03-01T10:00:00Z (delay 1h0m0s), deadline 2026-03-01T11:00:00Z" + due},
		{name: "no delay", ref: "configmap/nodelay",
			wantErr: "error: cannot expedite configmap/nodelay: it has no limbo.dev/deletionDelay annotation, so it is deleted without delay as soon as the controller sees it; " +
				"the reaper holds it meanwhile: " + held + "\n"},
		{name: "no delay, Bundles unreadable", ref: "configmap/nodelay", forbid: true,
			wantErr: "error: cannot expedite configmap/nodelay: it has no limbo.dev/deletionDelay annotation, so it is deleted without delay as soon as the controller sees it, " +
				"unless something holds it (kubectl limbo pending shows what)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var funcs *interceptor.Funcs
			if tc.forbid {
				funcs = &interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
					if _, ok := list.(*limbov1alpha1.BundleList); ok {
						return apierrors.NewForbidden(schema.GroupResource{Group: "limbo.dev", Resource: "bundles"}, "", errors.New("no"))
					}
					return c.List(ctx, list, opts...)
				}}
			}
			f := newFixture(t, funcs, adopter, released("moved", "1h", stampAgo(time.Hour)), released("other", "1h", stampAgo(time.Hour)), released("nodelay", "", ""))
			code, out, errOut := f.run("expedite", "-n", "team-a", tc.ref)
			if tc.wantErr != "" {
				if code != 1 || out != "" || errOut != tc.wantErr {
					t.Errorf("exit %d, stdout %q, stderr\n%s\nwant\n%s", code, out, errOut, tc.wantErr)
				}
				return
			}
			if code != 0 || out != tc.wantOut || errOut != "" {
				t.Errorf("exit %d, stderr %q, stdout\n%s\nwant\n%s", code, errOut, out, tc.wantOut)
			}
		})
	}
}

// expedite reads the Bundles of the object's namespace only: a tenant who may
// not list the Bundles of every namespace is still told of the reaper's hold.
func TestExpediteReadsItsNamespacesBundles(t *testing.T) {
	m := inLimbo("team-a", "moved", "gone", "1h", stampAgo(time.Hour))
	m = releasedBy(m, stampAgo(time.Hour))
	funcs := &interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if _, ok := list.(*limbov1alpha1.BundleList); ok && (&client.ListOptions{}).ApplyOptions(opts).Namespace != "team-a" {
			return apierrors.NewForbidden(schema.GroupResource{Group: "limbo.dev", Resource: "bundles"}, "", errors.New("only team-a"))
		}
		return c.List(ctx, list, opts...)
	}}
	f := newFixture(t, funcs, adoptingBundle(t, "b", "moved"), &corev1.ConfigMap{ObjectMeta: m})
	code, out, errOut := f.run("expedite", "-n", "team-a", "configmap/moved")
	const want = "The reaper holds it: Bundle b declares it to adopt it (limbo.dev/adopt); deleted only once no Bundle does\n"
	if code != 0 || errOut != "" || !strings.HasSuffix(out, want) {
		t.Errorf("exit %d, stderr %q, stdout\n%s\nwant it to end with\n%s", code, errOut, out, want)
	}
}

// An orphan its Bundle holds unstamped (a resource not Ready) is in limbo, with
// no countdown to end yet: expedite says so, and that one without a delay is
// deleted at once when the Bundle may — not "not in limbo, no deletion is
// scheduled". An object the Bundle still declares is not in limbo.
func TestExpediteHeldUnstampedOrphan(t *testing.T) {
	shop := shopDeclaring(t, []string{"keep"})
	held := &corev1.ConfigMap{ObjectMeta: managedBy("held", "shop", "1m")}
	heldNoDelay := &corev1.ConfigMap{ObjectMeta: managedBy("held-nodelay", "shop", "")}
	keep := &corev1.ConfigMap{ObjectMeta: managedBy("keep", "shop", "1m")}
	f := newFixture(t, nil, shop, held, heldNoDelay, keep)
	for name, want := range map[string]string{
		"configmap/held": "error: cannot expedite configmap/held yet: its Bundle no longer declares it and holds it before its countdown of 1m0s starts " +
			"(kubectl limbo pending shows why); the countdown starts when the Bundle may delete, or kubectl delete it now\n",
		"configmap/held-nodelay": "error: cannot expedite configmap/held-nodelay: it has no limbo.dev/deletionDelay annotation: its Bundle no longer declares it, " +
			"and deletes it without delay as soon as it may (it holds it now: kubectl limbo pending shows why)\n",
		"configmap/keep": "error: configmap/keep is not in limbo: it has no limbo.dev/deletionTimestamp annotation, so no deletion is scheduled\n",
	} {
		code, out, errOut := f.run("expedite", "-n", "team-a", name)
		if code != 1 || out != "" || errOut != want {
			t.Errorf("%s: exit %d, stdout %q, stderr\n%s\nwant\n%s", name, code, out, errOut, want)
		}
	}
}

// When a countdown started: the stamp, or the limbo.dev/expeditedFrom that
// expedite wrote while the stamp is earlier (moved back from it); and what
// expedite writes with a new stamp.
func TestCountdownStart(t *testing.T) {
	const (
		started = "2026-03-01T11:59:00Z"
		moved   = "2026-03-01T10:59:00Z" // started, expedited with a 1h delay
		later   = "2026-03-02T08:00:00Z" // a countdown started again after a cancel
	)
	for _, tt := range []struct {
		name, stamp, from string
		want              string // countdownStart
		newStamp          string
		wantFrom          any // countdownStartAfter with newStamp
	}{
		{name: "never expedited", stamp: started, want: started, newStamp: moved, wantFrom: started},
		{name: "expedited", stamp: moved, from: started, want: started, newStamp: "2026-03-01T10:00:00Z", wantFrom: started},
		{name: "stale: stamped again since", stamp: later, from: started, want: later, newStamp: "2026-03-02T07:00:00Z", wantFrom: later},
		{name: "stale: the same stamp", stamp: started, from: started, want: started, newStamp: started, wantFrom: nil},
		{name: "a delay of 0s moves nothing", stamp: started, want: started, newStamp: started, wantFrom: nil},
		{name: "unparsable from", stamp: moved, from: "yesterday", want: moved, newStamp: "2026-03-01T10:00:00Z", wantFrom: moved},
		{name: "unparsable stamp", stamp: "yesterday", from: started, want: "yesterday", newStamp: moved, wantFrom: nil},
		{name: "no stamp", want: "", newStamp: moved, wantFrom: nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			annotations := map[string]string{limbov1alpha1.AnnotationDeletionTimestamp: tt.stamp}
			if tt.from != "" {
				annotations[limbov1alpha1.AnnotationExpeditedFrom] = tt.from
			}
			if got := countdownStart(annotations); got != tt.want {
				t.Errorf("countdownStart = %q, want %q", got, tt.want)
			}
			if got := countdownStartAfter(annotations, tt.newStamp); got != tt.wantFrom {
				t.Errorf("countdownStartAfter(%s) = %v, want %v", tt.newStamp, got, tt.wantFrom)
			}
		})
	}
}

// After expedite, IN-LIMBO still counts from when the countdown started, not
// from the stamp moved back by the delay; expediting again keeps that start,
// and cancel removes expedite's note with the limbo marks.
func TestExpediteKeepsTheTimeInLimbo(t *testing.T) {
	f := newFixture(t, nil, &corev1.ConfigMap{ObjectMeta: inLimbo("team-a", "db", "", "1h", stampAgo(time.Minute))})
	inLimboOfDB := func() string {
		t.Helper()
		code, out, errOut := f.run("pending", "-n", "team-a", "-o", "wide")
		if code != 0 {
			t.Fatalf("pending: exit %d, stderr %q", code, errOut)
		}
		for _, line := range strings.Split(out, "\n") {
			if fields := strings.Fields(line); len(fields) >= 7 && fields[1] == "db" {
				return fields[6]
			}
		}
		t.Fatalf("no row of db in\n%s", out)
		return ""
	}
	for range 2 {
		if code, _, errOut := f.run("expedite", "configmap/db", "-n", "team-a"); code != 0 {
			t.Fatalf("expedite: exit %d, stderr %q", code, errOut)
		}
		if got := inLimboOfDB(); got != "60s" {
			t.Errorf("IN-LIMBO after expedite: %s, want 60s (since the countdown started, not since the stamp moved back by the 1h delay)", got)
		}
	}
	code, out, errOut := f.run("cancel", "configmap/db", "-n", "team-a")
	if code != 0 || !strings.Contains(out, "annotation "+limbov1alpha1.AnnotationExpeditedFrom) {
		t.Errorf("cancel: exit %d, stdout %q, stderr %q; want %s removed", code, out, errOut, limbov1alpha1.AnnotationExpeditedFrom)
	}
	var cm corev1.ConfigMap
	if err := f.client.Get(context.Background(), client.ObjectKey{Namespace: "team-a", Name: "db"}, &cm); err != nil {
		t.Fatal(err)
	}
	if from, ok := cm.Annotations[limbov1alpha1.AnnotationExpeditedFrom]; ok {
		t.Errorf("cancel left %s=%s", limbov1alpha1.AnnotationExpeditedFrom, from)
	}
}

// An orphan another Bundle of its namespace declares to adopt is handed over
// to that Bundle at its deadline, not deleted: expedite says so. It said the
// controller deletes it.
func TestExpediteOfAnObjectAnotherBundleAdopts(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: inLimbo("team-a", "db-config", "shop", "24h", stampAgo(time.Hour))}
	adopter := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "shop-v2", UID: uid("shop-v2")},
		Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{{Name: "db-config", Object: &runtime.RawExtension{
			Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"db-config","annotations":{"limbo.dev/adopt":"true"}}}`)}}}}}
	f := newFixture(t, nil, cm, adopter)
	code, out, errOut := f.run("expedite", "configmap/db-config", "-n", "team-a")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if !strings.Contains(out, "due now; the controller hands it over to Bundle shop-v2, which declares it to adopt it (limbo.dev/adopt), at its next pass instead of deleting it") ||
		strings.Contains(out, "the controller deletes it") {
		t.Errorf("stdout %q; want the hand-over to shop-v2", out)
	}
}
