package main

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// What expedite and cancel say is what the controller then does. Each row
// is an object in limbo and a Bundle, and the command's answer; each answered
// a promise the controller did not keep: "due now" for an object no Bundle
// controls (a restored copy: nothing deletes it), or whose teardown restarts
// its countdown; a cancel of an object its generator may make again, which
// left the Bundle NotOwned for good.
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
	made := stamped("made")
	made.Annotations[limbov1alpha1.AnnotationGeneratedBy] = "gen"
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
		{name: "cancel what a generator may make again", args: []string{"cancel", "cm/made"}, meta: made, bundle: func() *limbov1alpha1.Bundle {
			b := shopDeclaring(t, nil, "gen")
			b.Generation, b.Status.ObservedGeneration = 2, 1
			return b
		}(),
			wantErr: `error: cannot cancel configmap/made: its controller, Bundle team-a/shop, may make it again (plugin resource "gen", annotation limbo.dev/generatedBy, has not been Ready in a pass of the Bundle's spec): its next pass decides; cancel again once it has run, or remove the plugin resource` + "\n"},
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
