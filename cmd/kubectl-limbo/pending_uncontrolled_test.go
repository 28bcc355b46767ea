package main

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// Only the Bundle that controls an object in limbo deletes it (the reaper
// acts on released objects only). A copy restored by Velero, which drops
// owner references, of an object its Bundle was counting down showed its
// countdown, then due, while nothing would delete it; one whose owner
// reference names an earlier Bundle of the name is the garbage collector's.
func TestPendingObjectNoBundleControls(t *testing.T) {
	shop := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "shop", UID: uid("shop")}}
	counted := &corev1.ConfigMap{ObjectMeta: inLimbo("team-a", "counted", "shop", "1h", stampAgo(10*time.Minute))}
	restored := &corev1.ConfigMap{ObjectMeta: inLimbo("team-a", "restored", "shop", "1h", stampAgo(20*time.Minute))}
	restored.OwnerReferences = nil
	stale := &corev1.ConfigMap{ObjectMeta: inLimbo("team-a", "stale", "shop", "1h", stampAgo(30*time.Minute))}
	stale.OwnerReferences[0].UID = "uid-earlier-shop"
	other := &corev1.ConfigMap{ObjectMeta: inLimbo("team-a", "other", "shop", "1h", stampAgo(40*time.Minute))}
	other.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "uid-web", Controller: ptr(true)}}
	gone := &corev1.ConfigMap{ObjectMeta: inLimbo("team-a", "orphaned", "gone", "1h", stampAgo(50*time.Minute))}
	gone.OwnerReferences = nil

	f := newFixture(t, nil, shop, counted, restored, stale, other, gone)
	code, out, errOut := f.run("pending", "-n", "team-a")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	want := `KIND        NAME       BUNDLE   DELETE-AFTER           TIME-LEFT   MESSAGE
ConfigMap   stale      shop     2026-03-01T12:30:00Z   30m         its owner reference names an earlier Bundle shop, gone: the garbage collector deletes it, whatever its countdown
ConfigMap   counted    shop     2026-03-01T12:50:00Z   50m
ConfigMap   orphaned   gone     2026-03-01T12:10:00Z   held        controlled by no Bundle (a restore from a backup drops owner references): nothing deletes it; declare it again in a Bundle, kubectl limbo cancel it, or delete it
ConfigMap   other      shop     2026-03-01T12:20:00Z   held        controlled by Deployment web, not by Bundle shop, which its label limbo.dev/bundle names: no Bundle deletes it
ConfigMap   restored   shop     2026-03-01T12:40:00Z   held        controlled by no Bundle (a restore from a backup drops owner references): nothing deletes it; declare it again in a Bundle, kubectl limbo cancel it, or delete it
`
	if got := trimTrailingSpaces(out); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
