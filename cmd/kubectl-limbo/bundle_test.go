package main

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// Only limbo's Tombstone is refused as one: a Tombstone kind of another API
// group is an ordinary object.
func TestIsTombstone(t *testing.T) {
	for gk, want := range map[schema.GroupKind]bool{
		{Group: "limbo.dev", Kind: "Tombstone"}:   true,
		{Group: "example.com", Kind: "Tombstone"}: false,
		{Group: "limbo.dev", Kind: "Bundle"}:      false,
	} {
		if got := isTombstone(gk); got != want {
			t.Errorf("isTombstone(%s) = %v, want %v", gk, got, want)
		}
	}
}

// A Bundle's entry is of one object: its kind (with group), namespace, name and
// cluster all match. An entry without a namespace is the Bundle's namespace's,
// or a cluster-scoped object's.
func TestPendingEntry(t *testing.T) {
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "shop"},
		Status: limbov1alpha1.BundleStatus{PendingDeletions: []limbov1alpha1.PendingDeletion{
			{APIVersion: "v1", Kind: "Secret", Namespace: "team-a", Name: "db", Message: "the Secret"},
			{APIVersion: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "db", Cluster: "east", Message: "east's"},
			{APIVersion: "apps/v1", Kind: "Deployment", Name: "app", Message: "the Deployment"},
			{APIVersion: "v1", Kind: "PersistentVolume", Name: "pv", Message: "the volume"},
		}}}
	configMap := schema.GroupKind{Kind: "ConfigMap"}
	for _, tc := range []struct {
		gk              schema.GroupKind
		namespace, name string
		want            string
	}{
		{schema.GroupKind{Kind: "Secret"}, "team-a", "db", "the Secret"},
		{configMap, "team-a", "db", ""}, // the Secret's, and east's: not this cluster's ConfigMap
		{schema.GroupKind{Group: "apps", Kind: "Deployment"}, "team-a", "app", "the Deployment"},
		{schema.GroupKind{Group: "apps", Kind: "Deployment"}, "team-b", "app", ""},
		{schema.GroupKind{Kind: "PersistentVolume"}, "", "pv", "the volume"},
	} {
		got := ""
		if e := pendingEntry(b, tc.gk, tc.namespace, tc.name); e != nil {
			got = e.Message
		}
		if got != tc.want {
			t.Errorf("pendingEntry(%s %s/%s) = %q, want %q", tc.gk, tc.namespace, tc.name, got, tc.want)
		}
	}
}
