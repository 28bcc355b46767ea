package it

import (
	"context"
	"fmt"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/it/testplugin"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// pluginResource is a Bundle resource running the test plugin on domain.
func pluginResource(name, domain, delay string) limbov1alpha1.Resource {
	return limbov1alpha1.Resource{Name: name, Plugin: &limbov1alpha1.PluginResource{
		Name: testplugin.Name, DeletionDelay: delay, Spec: &apiextensionsv1.JSON{Raw: []byte(fmt.Sprintf(`{"domain":%q}`, domain))},
	}}
}

func tombstones(t testing.TB, ns string) []limbov1alpha1.Tombstone {
	t.Helper()
	var list limbov1alpha1.TombstoneList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// An orphaned external item gets a Tombstone, stamped with the plugin resource's
// delay; at the deadline the item is deleted and the Tombstone goes.
func TestTombstoneScheduleThenDelete(t *testing.T) {
	ns := env.Namespace(t)
	domain := external.Domain(ns)
	domain.Set("keep", true)
	domain.Set("orphan", false)
	b := createBundle(t, ns, "ext", pluginResource("items", ns, "3s"))
	waitReady(t, b)
	var ts limbov1alpha1.Tombstone
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		list := tombstones(t, ns)
		if len(list) != 1 {
			return fmt.Errorf("%d tombstones", len(list))
		}
		ts = list[0]
		return nil
	})
	if ts.Spec.Item.ID != "orphan" || ts.Spec.Plugin != testplugin.Name || ts.Spec.Resource != "items" ||
		ts.Labels[limbov1alpha1.LabelBundle] != "ext" || ts.Annotations[limbov1alpha1.AnnotationDeletionDelay] != "3s" ||
		len(ts.Finalizers) != 1 || ts.Finalizers[0] != limbov1alpha1.FinalizerHardDelete {
		t.Errorf("tombstone = %+v", ts)
	}
	if !domain.Exists("orphan") {
		t.Fatal("item deleted before its deadline")
	}
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if domain.Exists("orphan") || len(tombstones(t, ns)) != 0 {
			return fmt.Errorf("orphan exists=%v, tombstones=%d", domain.Exists("orphan"), len(tombstones(t, ns)))
		}
		return nil
	})
	if !domain.Exists("keep") || domain.Deletes("orphan") != 1 {
		t.Errorf("keep exists=%v, orphan deletes=%d (want true, 1)", domain.Exists("keep"), domain.Deletes("orphan"))
	}
}
