package bundle

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
)

// A Bundle made again after its predecessor of the same name was deleted with
// --cascade=orphan finds the predecessor's objects labelled with its name and
// controlled by nothing. One its Blocked resource declares is never adopted (a
// blocked resource writes nothing) — or one anyone who may create objects in
// the namespace made with that name and label. A plain delete of the Bundle
// must still delete what it created: that object is no evidence of an
// orphaning delete. It was, and the teardown disowned everything and let the
// Bundle go.
func TestTeardownStrayLabelledObjectIsNoOrphanCascade(t *testing.T) {
	registry, err := plugin.NewRegistry(neverReady{})
	if err != nil {
		t.Fatal(err)
	}
	b := livingBundle(cmResource(t, "app", nil), cmResource(t, "db", nil, "gate"),
		limbov1alpha1.Resource{Name: "gate", Plugin: &limbov1alpha1.PluginResource{Name: "never-ready"}})
	stray := foreignConfigMap("db", map[string]string{limbov1alpha1.LabelBundle: "web"}, "")
	stray.UID = "stray-uid"
	f := newTeardownFixture(t, b, registry, stray)
	f.reconcileUntil(t, "app not Ready, db not Blocked", func() bool {
		state, _ := f.resourceState(t, "db")
		return f.resourceReady(t, "app")() && state == limbov1alpha1.ResourceBlocked
	})
	if err := f.c.Delete(context.Background(), b); err != nil { // background: held by limbo's finalizer
		t.Fatal(err)
	}
	strayVersion := f.liveConfigMap(t, "db").ResourceVersion

	f.reconcile(t)
	if app := f.liveConfigMap(t, "app"); app != nil {
		t.Errorf("app is still there (controller %v): the plain delete was taken for --cascade=orphan", metav1.GetControllerOf(app))
	}
	if db := f.liveConfigMap(t, "db"); db == nil || db.ResourceVersion != strayVersion {
		t.Errorf("the stray db, never the Bundle's, was written or deleted: %v", db)
	}
}

// Deleted with --cascade=orphan, a Bundle takes its objects out of limbo. An
// object labelled with its name that its ServiceAccount may not write, and that
// it does not vouch for (its status does not record it), holds nothing: anyone
// who may create an object in the namespace can make one, stamped. A refusal
// never clears; it held the Bundle for good. One it vouches for, and a failure
// that clears by itself, still hold it until a retry succeeds.
func TestOrphanCascadeUnvouchedRefusedCancel(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "stamped", errors.New("the ServiceAccount may not"))
	for _, tc := range []struct {
		name   string
		listed bool // the Bundle's status lists stamped in pendingDeletions
		err    error
		letGo  bool
	}{
		{name: "not vouched for, refused: the Bundle is let go", err: forbidden, letGo: true},
		{name: "listed in pendingDeletions, refused: held", listed: true, err: forbidden},
		{name: "not vouched for, timed out: held", err: apierrors.NewServerTimeout(schema.GroupResource{Resource: "configmaps"}, "patch", 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var status limbov1alpha1.BundleStatus
			if tc.listed {
				setPending(&status, []limbov1alpha1.PendingDeletion{{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "stamped", Resource: "gone"}})
			}
			stamped := foreignConfigMap("stamped", map[string]string{limbov1alpha1.LabelBundle: "web", limbov1alpha1.LabelPendingDeletion: "true"}, "")
			stamped.Annotations = map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1h", limbov1alpha1.AnnotationDeletionTimestamp: "2020-01-01T00:00:00Z"}
			f := newTeardownFixture(t, deletedBundle(nil, status, metav1.FinalizerOrphanDependents), nil, bundleConfigMap("app", nil), stamped)
			refusePatches(f, tc.err, "shop/stamped")

			_, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(f.bundle)})
			if tc.letGo != (err == nil) {
				t.Errorf("Reconcile: %v, want an error %v", err, !tc.letGo)
			}
			if app := f.liveConfigMap(t, "app"); app == nil || metav1.GetControllerOf(app) != nil {
				t.Errorf("app not disowned: %v", app)
			}
			// Let go: limbo's finalizer is removed (the fake API server has no
			// garbage collector to remove orphan).
			var cur limbov1alpha1.Bundle
			if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(f.bundle), &cur); err != nil {
				t.Fatal(err)
			}
			if letGo := !controllerutil.ContainsFinalizer(&cur, limbov1alpha1.FinalizerTeardown); letGo != tc.letGo {
				t.Errorf("the Bundle let go: %v, want %v", letGo, tc.letGo)
			}
			if !f.inLimbo(t, "shop", "stamped") {
				t.Errorf("a refused cancel was written")
			}
		})
	}
}
