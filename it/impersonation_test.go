package it

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/storageos/storageossim"
)

// A Bundle with spec.serviceAccountName can do only what that ServiceAccount may:
// a tenant allowed ConfigMaps but not Secrets gets its ConfigMaps, and its Secret
// resource is an Error (Forbidden, with the API server's message); nothing else
// in the Bundle is affected.
func TestImpersonationForbiddenWrite(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	tenant(t, ns, "tenant", "get", "list", "watch", "create", "update", "patch", "delete")
	b := createBundleAs(t, ns, "tenant", "shop",
		objectResource(t, "config", configMap("config", map[string]any{"a": "b"}, nil)),
		objectResource(t, "password", secret("password")),
		objectResource(t, "more", configMap("more", map[string]any{"c": "d"}, nil)))

	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		for _, name := range []string{"config", "more"} {
			if err := resourceIs(cur, name, limbov1alpha1.ResourceReady, ""); err != nil {
				return err
			}
		}
		if err := resourceIs(cur, "password", limbov1alpha1.ResourceError, string(metav1.StatusReasonForbidden)); err != nil {
			return err
		}
		if msg := resourceStatus(cur, "password").Message; !strings.Contains(msg, `secrets "password" is forbidden`) || !strings.Contains(msg, "system:serviceaccount:"+ns+":tenant") {
			return fmt.Errorf("password's message %q is not the API server's", msg)
		}
		return nil
	})
	if getObject(t, secretGVK, ns, "password") != nil {
		t.Errorf("the Secret was written although the tenant may not")
	}
}

// A misspelt spec.serviceAccountName (deployr for deployer) is refused by the API
// server word for word as a real ServiceAccount without the rights would be; the
// resource's message says that the ServiceAccount does not exist. A real one
// refused keeps the API server's message alone (TestImpersonationForbiddenWrite).
func TestImpersonationMissingServiceAccount(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	tenant(t, ns, "deployer", "get", "list", "watch", "create", "update", "patch", "delete")
	b := createBundleAs(t, ns, "deployr", "shop", objectResource(t, "imp-a", configMap("imp-a", map[string]any{"a": "b"}, nil)))

	want := `apply ConfigMap "imp-a": configmaps "imp-a" is forbidden: User "system:serviceaccount:` + ns + `:deployr" cannot patch resource "configmaps" in API group "" in the namespace "` + ns + `"` +
		` (ServiceAccount "deployr" does not exist in namespace "` + ns + `")`
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if err := resourceIs(cur, "imp-a", limbov1alpha1.ResourceError, string(metav1.StatusReasonForbidden)); err != nil {
			return err
		}
		if msg := resourceStatus(cur, "imp-a").Message; msg != want {
			return fmt.Errorf("imp-a's message\n%s\nwant\n%s", msg, want)
		}
		return nil
	})
}

// An orphan the tenant may not delete stays, visibly: pendingDeletions says why
// and a Warning event tells; nothing else is affected.
func TestImpersonationForbiddenDeleteKeepsTheOrphan(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	tenant(t, ns, "tenant", "get", "list", "watch", "create", "update", "patch") // no delete
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil))
	b := createBundleAs(t, ns, "tenant", "shop", keep, objectResource(t, "orphan", configMap("orphan", map[string]any{"a": "b"}, nil)))
	waitReady(t, b)
	uid := string(getObject(t, configMapGVK, ns, "orphan").GetUID())

	updateBundle(t, b, keep)
	waitEventContaining(t, b, corev1.EventTypeWarning, limbov1alpha1.EventDeleteFailed, "ConfigMap "+ns+"/orphan", "forbidden")
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		for _, p := range cur.Status.PendingDeletions {
			if p.Name == "orphan" && strings.Contains(p.Message, "forbidden") {
				return nil
			}
		}
		return fmt.Errorf("pendingDeletions %+v does not show orphan as forbidden", cur.Status.PendingDeletions)
	})
	testenv.Consistently(t, 2*time.Second, existsWithUID(t, configMapGVK, ns, "orphan", uid))
}

// --default-service-account applies to the Bundles that name no ServiceAccount.
func TestImpersonationDefaultServiceAccount(t *testing.T) {
	env.WithoutController(t)
	ns := env.Namespace(t)
	tenant(t, ns, "tenant", "get", "list", "watch", "create", "update", "patch", "delete")
	env.ControllerProcess(t, "default-sa", "--namespaces", ns, "--leader-elect=false", "--default-service-account", "tenant")
	b := createBundle(t, ns, "shop",
		objectResource(t, "config", configMap("config", map[string]any{"a": "b"}, nil)),
		objectResource(t, "password", secret("password")))
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if err := resourceIs(cur, "config", limbov1alpha1.ResourceReady, ""); err != nil {
			return err
		}
		return resourceIs(cur, "password", limbov1alpha1.ResourceError, string(metav1.StatusReasonForbidden))
	})
}

// tenant creates the ServiceAccount name in ns, allowed verbs on ConfigMaps only.
func tenant(t testing.TB, ns, name string, verbs ...string) {
	t.Helper()
	ctx := context.Background()
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: verbs}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}}},
	} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatalf("create %T %s: %v", obj, name, err)
		}
	}
}

// createBundleAs creates a Bundle that names a ServiceAccount.
func createBundleAs(t testing.TB, ns, serviceAccount, name string, resources ...limbov1alpha1.Resource) *limbov1alpha1.Bundle {
	t.Helper()
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: limbov1alpha1.BundleSpec{ServiceAccountName: serviceAccount, Resources: resources}}
	if err := env.Client.Create(context.Background(), b); err != nil {
		t.Fatalf("create Bundle: %v", err)
	}
	return b
}

func secret(name string) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": name}, "stringData": map[string]any{"password": "x"}}
}

// A plugin's credentials Secret is read as the Bundle's ServiceAccount: a
// tenant that may not read the Secret gets a PluginFailed resource naming the
// refusal, and the plugin's backend hears nothing. Before, limbo read any
// Secret of the namespace as itself and logged in with it to whatever endpoint
// the tenant's spec named. Granted the Secret, the tenant's Bundle works.
func TestImpersonationPluginCredentials(t *testing.T) {
	t.Parallel()
	f := newNSGCFixture(t)
	tenant(t, f.ns, "tenant", "get", "list", "watch", "create", "update", "patch", "delete")
	b := createBundleAs(t, f.ns, "tenant", "storage", f.resource("1h"))
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if err := resourceIs(cur, nsgcResource, limbov1alpha1.ResourceError, limbov1alpha1.ReasonPluginFailed); err != nil {
			return err
		}
		if msg := resourceStatus(cur, nsgcResource).Message; !strings.Contains(msg, `secrets "`+nsgcSecret+`" is forbidden`) || !strings.Contains(msg, "system:serviceaccount:"+f.ns+":tenant") {
			return fmt.Errorf("the resource's message %q is not the refusal of the tenant's read of the Secret", msg)
		}
		return nil
	})
	if n := f.sim.Calls(storageossim.OpLogin); n != 0 {
		t.Errorf("StorageOS heard %d logins with a Secret the tenant may not read", n)
	}

	reader := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "read-storageos-api", Namespace: f.ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{nsgcSecret}, Verbs: []string{"get"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "read-storageos-api", Namespace: f.ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: reader.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "tenant", Namespace: f.ns}}}
	for _, obj := range []client.Object{reader, binding} {
		if err := env.Client.Create(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
	}
	waitNSGCReady(t, b, len(f.sim.Namespaces()))
}
