package main

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// kubectl limbo pending decodes the templates of the Bundle its released
// objects name once a command, not once per object: a Bundle that released
// 1,000 objects and has 200 templates cost 200,000 template decodes. The hold
// of an object after the first costs fewer allocations than its Bundle has
// templates (decoding them costs several each), and is that object's alone.
func TestReleasedHoldsDecodeTheirBundleOnce(t *testing.T) {
	const templates = 200
	shop := limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "shop", UID: uid("shop"), ResourceVersion: "7", Generation: 1},
		Status: limbov1alpha1.BundleStatus{ObservedGeneration: 1}}
	for i := range templates {
		name := fmt.Sprintf("cm-%04d", i)
		shop.Spec.Resources = append(shop.Spec.Resources, limbov1alpha1.Resource{Name: name, Object: &runtime.RawExtension{Raw: []byte(
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","annotations":{"limbo.dev/deletionDelay":"1h"}}}`)}})
	}
	index := indexBundles([]limbov1alpha1.Bundle{shop})
	configMap := schema.GroupKind{Kind: "ConfigMap"}
	released := func(name string) *metav1.ObjectMeta {
		m := releasedBy(inLimbo("team", name, "shop", "1h", stampAgo(2*time.Hour)), stampAgo(2*time.Hour)) // due
		return &m
	}
	declared, undeclared := released("cm-0042"), released("other")
	if h, ok := releasedHold(declared, configMap, index, testNow); !ok || h.Bundle != "shop" {
		t.Errorf("cm-0042: hold %+v, %t; want held by shop, which declares it", h, ok)
	}
	if h, ok := releasedHold(undeclared, configMap, index, testNow); ok {
		t.Errorf("other: hold %+v; want none: no Bundle declares it", h)
	}
	perObject := testing.AllocsPerRun(20, func() { releasedHold(declared, configMap, index, testNow) })
	if perObject >= templates {
		t.Errorf("the hold of an object costs %.0f allocations, want fewer than its Bundle's %d templates: they are decoded for each object", perObject, templates)
	}
}
