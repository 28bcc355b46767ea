package it

import (
	"testing"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A plugin that lists a kind it does not watch through Request.Client sees every
// object of it, not only those limbo manages: the controller's cache holds only
// managed objects of such kinds, and a plugin that took its listing for the
// desired side would judge the rest orphans. Here: two ConfigMaps a user made,
// one the Bundle manages — three listed. Until 2026-11-25 the plugin saw the
// managed one only.
func TestPluginClientListsWholeKinds(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	domain := external.Domain(ns)
	domain.CountConfigMaps(true)
	for _, name := range []string{"user-a", "user-b"} {
		createObject(t, ns, configMap(name, map[string]any{"k": "v"}, nil))
	}
	b := createBundle(t, ns, "lister",
		objectResource(t, "managed", configMap("managed", map[string]any{"k": "v"}, nil)),
		pluginResource("items", ns, ""))
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		return resourceMessageIs(cur, "items", limbov1alpha1.ResourceReady, "", "0 items; 3 ConfigMaps listed")
	})
}
