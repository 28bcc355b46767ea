package main

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// What expedite and cancel say is what the controller then does. Each row
// is an object in limbo and a Bundle, and the command's answer; each answered
// a promise the controller did not keep: "due now" for an object no Bundle
// controls (a restored copy: nothing deletes it), or whose teardown restarts
// its countdown.
func TestExpediteAndCancelAsTheControllerActs(t *testing.T) {
	stamped := func(name string) metav1.ObjectMeta {
		return inLimbo("team-a", name, "shop", "1h", stampAgo(10*time.Minute))
	}
	torn := func(b *limbov1alpha1.Bundle) *limbov1alpha1.Bundle {
		b.DeletionTimestamp, b.Finalizers = &metav1.Time{Time: testNow}, []string{limbov1alpha1.FinalizerTeardown}
		b.Generation, b.Status.ObservedGeneration = 2, 1
		return b
	}
	restored := stamped("restored")
	restored.OwnerReferences = nil
	unstamped := managedBy("unstamped", "shop", "1h")
	for _, tc := range []struct {
		name    string
		args    []string
		meta    metav1.ObjectMeta
		bundle  *limbov1alpha1.Bundle
		wantErr string
	}{
		{name: "expedite a copy no Bundle controls", args: []string{"expedite", "cm/restored"}, meta: restored, bundle: shopDeclaring(t, nil),
			wantErr: "error: cannot expedite configmap/restored: controlled by no Bundle (a restore from a backup drops owner references): nothing deletes it; declare it again in a Bundle, kubectl limbo cancel it, or delete it\n"},
		{name: "expedite what a Bundle being deleted declares again", args: []string{"expedite", "cm/again"}, meta: stamped("again"), bundle: torn(shopDeclaring(t, []string{"again"})),
			wantErr: "error: cannot expedite configmap/again: its controller, Bundle team-a/shop, is being deleted and declares it again (or its generator may make it again): its teardown restarts the countdown from the Bundle's deletion when it releases it; expedite it once released, or kubectl delete it\n"},
		{name: "expedite what a Bundle being deleted has not released yet", args: []string{"expedite", "cm/unstamped"}, meta: unstamped, bundle: torn(shopDeclaring(t, []string{"unstamped"})),
			wantErr: "error: cannot expedite configmap/unstamped yet: its Bundle is being deleted, and its teardown deletes it, or releases it to the reaper with its delay, when its wave comes (kubectl limbo pending shows it then); expedite it once released, or kubectl delete it now\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cm := &corev1.ConfigMap{ObjectMeta: tc.meta}
			f := newFixture(t, nil, cm, tc.bundle)
			code, out, errOut := f.run(append(tc.args, "-n", "team-a")...)
			if code != 1 || out != "" || errOut != tc.wantErr {
				t.Errorf("exit %d, stdout %q, stderr\n%s\nwant\n%s", code, out, errOut, tc.wantErr)
			}
			var got corev1.ConfigMap
			if err := f.client.Get(t.Context(), client.ObjectKeyFromObject(cm), &got); err != nil {
				t.Fatal(err)
			}
			if got.ResourceVersion != "999" {
				t.Errorf("the object was written: %+v", got.ObjectMeta)
			}
		})
	}
}

// A cancel of a generated object its generator may make again (its plan of
// the Bundle's spec not Ready yet) keeps it the Bundle's: disowned and
// unlabelled, the object the generator makes again was in the way of its pass
// for good (NotOwned), and the Bundle never Ready. Only the countdown goes.
func TestCancelWhatAGeneratorMayMakeAgain(t *testing.T) {
	made := inLimbo("team-a", "made", "shop", "1h", stampAgo(2*time.Hour))
	made.Annotations[limbov1alpha1.AnnotationGeneratedBy] = "gen"
	shop := shopDeclaring(t, nil, "gen")
	shop.Generation, shop.Status.ObservedGeneration = 2, 1
	cm := &corev1.ConfigMap{ObjectMeta: made}
	f := newFixture(t, nil, cm, shop)
	code, out, errOut := f.run("cancel", "-n", "team-a", "cm/made")
	want := `configmap/made: deletion cancelled; removed annotation limbo.dev/deletionTimestamp, label limbo.dev/pending-deletion=true.
Bundle team-a/shop may make it again (plugin resource "gen" has not been Ready in a pass of its spec) and keeps managing it: its owner reference and the label limbo.dev/bundle=shop are kept; if the plugin does not make it again, the Bundle's next pass starts a new countdown.
`
	if code != 0 || out != want || errOut != "" {
		t.Fatalf("exit %d, stderr %q, stdout\n%s\nwant\n%s", code, errOut, out, want)
	}
	var got corev1.ConfigMap
	if err := f.client.Get(t.Context(), client.ObjectKeyFromObject(cm), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.OwnerReferences) != 1 || got.Labels[limbov1alpha1.LabelBundle] != "shop" || got.Annotations[limbov1alpha1.AnnotationDeletionTimestamp] != "" {
		t.Errorf("left: owners %v, labels %v, annotations %v", got.OwnerReferences, got.Labels, got.Annotations)
	}
}

// A released generated object that the Bundle its label names may make again
// (a Bundle of that name re-created, its generator not run yet) keeps its
// label when cancelled: without it, a generated object is never adopted, and
// the generator's object was in the Bundle's way for good (NotOwned), the
// Bundle never Ready. Kept by its label, the pass adopts it if the generator
// makes it again; if not, nothing deletes it (no controller, no mark).
func TestCancelOfAReleasedObjectAGeneratorMayMakeAgain(t *testing.T) {
	made := releasedBy(inLimbo("team-a", "made", "shop", "1h", stampAgo(2*time.Hour)), stampAgo(2*time.Hour))
	made.Annotations[limbov1alpha1.AnnotationGeneratedBy] = "gen"
	shop := shopDeclaring(t, nil, "gen")
	shop.Generation, shop.Status.ObservedGeneration = 2, 1
	cm := &corev1.ConfigMap{ObjectMeta: made}
	f := newFixture(t, nil, cm, shop)
	code, out, errOut := f.run("cancel", "-n", "team-a", "cm/made")
	if code != 0 || errOut != "" || !strings.Contains(out, `Bundle team-a/shop may make it again (plugin resource "gen" has not been Ready in a pass of its spec): the label limbo.dev/bundle=shop is kept`) {
		t.Fatalf("exit %d, stderr %q, stdout %q; want the cancel, the label kept", code, errOut, out)
	}
	var got corev1.ConfigMap
	if err := f.client.Get(t.Context(), client.ObjectKeyFromObject(cm), &got); err != nil {
		t.Fatal(err)
	}
	if got.Labels[limbov1alpha1.LabelBundle] != "shop" || softdelete.HasLimboMark(&got) || softdelete.Released(&got) {
		t.Errorf("left: labels %v, annotations %v; want the label kept, no limbo mark", got.Labels, got.Annotations)
	}
}
