package it

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/controller"
	"github.com/limbo-dev/limbo/pkg/plugin"
)

// A kind a plugin watches whose CRD was established after the controller was
// built but before it started — a standby replica that takes the lease after
// csi-baremetal was installed — is watched from the start, and the controller
// runs. Before, the CRD informer's first list started that watch from its
// event handler while the controller, starting, held the lock the watch needs
// and waited for that very list to sync: no Bundle was reconciled until the
// sync timed out (2 minutes), and then the manager stopped with an error.
func TestPluginKindServedBeforeTheStartIsWatched(t *testing.T) {
	env.WithoutController(t)
	ns := env.Namespace(t)
	kind := schema.GroupVersionKind{Group: ns + ".late.test.limbo.dev", Version: "v1", Kind: "Beacon"}
	beacons := &beaconPlugin{kind: kind}
	registry, err := plugin.NewRegistry(beacons)
	if err != nil {
		t.Fatal(err)
	}
	opts := env.ControllerOptions()
	opts.Namespaces, opts.LeaderElect, opts.Plugins = []string{ns}, false, registry
	opts.MetricsAddr, opts.ProbeAddr, opts.PprofAddr = "0", "0", ""
	mgr, err := controller.NewManager(env.Config, opts) // the kind is not served yet
	if err != nil {
		t.Fatal(err)
	}

	crd := schemalessCRD(kind.Group, kind.Kind, kind.Version)
	if err := env.Client.Create(context.Background(), crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Client.Delete(context.Background(), crd); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete the CRD: %v", err)
		}
	})
	waitEstablished(t, crd)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() { // before the CRD's deletion: cleanups run last first
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the controller: %v", err)
		}
	})

	b := createBundle(t, ns, "late", limbov1alpha1.Resource{Name: "beacons", Plugin: &limbov1alpha1.PluginResource{Name: beaconPluginName}})
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		return resourceMessageIs(cur, "beacons", limbov1alpha1.ResourceReady, "", "planned")
	})
	// An object of the kind runs the plugin's Bundle again: the kind is watched.
	beacon := &unstructured.Unstructured{}
	beacon.SetGroupVersionKind(kind)
	beacon.SetNamespace(ns)
	beacon.SetName("go")
	if err := env.Client.Create(context.Background(), beacon); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if n := beacons.plans.Load(); n < 2 {
			return fmt.Errorf("planned %d times, want the Beacon's event to run the Bundle again", n)
		}
		return nil
	})
}

const beaconPluginName = "beacons"

// beaconPlugin watches kind (metadata only) and plans nothing: it counts its
// plans.
type beaconPlugin struct {
	kind  schema.GroupVersionKind
	plans atomic.Int32
}

func (p *beaconPlugin) Describe() plugin.Description {
	watched := &metav1.PartialObjectMetadata{}
	watched.SetGroupVersionKind(p.kind)
	return plugin.Description{Name: beaconPluginName, Watches: []client.Object{watched},
		Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}
}

func (p *beaconPlugin) Plan(context.Context, plugin.Request) (*plugin.Result, error) {
	p.plans.Add(1)
	return &plugin.Result{Ready: true, Message: "planned"}, nil
}
