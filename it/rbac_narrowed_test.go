package it

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/controllerprocess"
)

// The controller runs with the install's own limbo-controller ClusterRole and
// the managed-objects role narrowed as docs/install.md recommends: here to
// ConfigMaps, and LimitRanges it may write but not list or watch (a rule
// written without them). A Bundle of ConfigMaps gets Ready. The Bundle that
// declares a LimitRange reports that the kind's cache has not synced, and that
// informer, which never syncs, does not make the replica unready: its readiness
// is about limbo's own kinds (before, /readyz waited for every informer, and one
// Bundle kept the leader unready until its restart). The scans skip the kinds the
// controller may not list, saying so once, instead of failing and retrying them
// for as long as the rule stands.
func TestNarrowedRBAC(t *testing.T) {
	env.WithoutController(t)
	ns := env.Namespace(t)
	user := "limbo-narrowed-" + ns
	grantNarrowedRBAC(t, user, ns)
	// With leader election, on a Lease in ns under the install's Role.
	p := env.ControllerProcessWithKubeconfig(t, "narrowed", kubeconfigAs(t, user), "--namespaces", ns,
		"--leader-elect=true", "--leader-election-namespace", ns, "--leader-election-id", "limbo-narrowed")

	waitReady(t, createBundle(t, ns, "config", objectResource(t, "config", configMap("config", map[string]any{"k": "v"}, nil))))
	limits := createBundle(t, ns, "limits", objectResource(t, "range", map[string]any{
		"apiVersion": "v1", "kind": "LimitRange", "metadata": map[string]any{"name": "range"},
		"spec": map[string]any{"limits": []any{map[string]any{"type": "Container", "default": map[string]any{"cpu": "100m"}}}},
	}))
	waitBundle(t, limits, func(cur *limbov1alpha1.Bundle) error {
		if err := resourceIs(cur, "range", limbov1alpha1.ResourceError, limbov1alpha1.ReasonReadFailed); err != nil {
			return err
		}
		if msg := cur.Status.Resources[0].Message; !strings.Contains(msg, "has not synced") {
			return fmt.Errorf("resource range: message %q does not say the cache has not synced", msg)
		}
		return nil
	})

	probe := &http.Client{Timeout: 5 * time.Second}
	for _, path := range []string{"/readyz", "/healthz"} { // DESIGN §6: both served
		testenv.Eventually(t, testenv.DefaultTimeout, func() error {
			resp, err := probe.Get("http://" + p.ProbeAddr + path)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s: %s", path, resp.Status)
			}
			return nil
		})
	}

	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		log, err := os.ReadFile(p.LogPath)
		if err != nil {
			return err
		}
		if !strings.Contains(string(log), "not scanning a kind the controller may not list") || !strings.Contains(string(log), `"kind":"/v1, Kind=LimitRange"`) {
			return fmt.Errorf("the log does not say that LimitRanges are not scanned")
		}
		return nil
	})
	log, err := os.ReadFile(p.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, failure := range []string{"scan of kinds for objects of Bundles; retrying", "reaper pass"} {
		if strings.Contains(string(log), failure) {
			t.Errorf("the log has %q: a kind the controller may not list failed a scan%s", failure, controllerprocess.Tail(p.LogPath, 20))
		}
	}

	// A teardown under the install's role: the Bundle's finalizer goes, and its
	// object with it.
	config := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "config"}}
	deleteBundle(t, config, metav1.DeletePropagationBackground)
	waitBundleGone(t, config)
	waitGone(t, configMapGVK, ns, "config")
}

// grantNarrowedRBAC grants user the install's limbo-controller ClusterRole, its
// limbo-leader-election Role in leaderNamespace, and a managed-objects role
// narrowed to ConfigMaps, and LimitRanges without list and watch, until the
// test ends (the Role goes with its namespace).
func grantNarrowedRBAC(t testing.TB, user, leaderNamespace string) {
	t.Helper()
	var controllerRole rbacv1.ClusterRole
	var leaderRole rbacv1.Role
	for _, u := range readManifests(t, filepath.Join(env.RepoRoot, "build", "deploy", "rbac.yaml")) {
		switch {
		case u.GetKind() == "ClusterRole" && u.GetName() == "limbo-controller":
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &controllerRole); err != nil {
				t.Fatal(err)
			}
		case u.GetKind() == "Role" && u.GetName() == "limbo-leader-election":
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &leaderRole); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(controllerRole.Rules) == 0 || len(leaderRole.Rules) == 0 {
		t.Fatal("build/deploy/rbac.yaml has no ClusterRole limbo-controller or no Role limbo-leader-election")
	}
	// The leader-election Role, in the test's namespace: the Lease is there.
	ns := leaderNamespace
	for _, obj := range []client.Object{
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user + "-leader-election"}, Rules: leaderRole.Rules},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user + "-leader-election"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user + "-leader-election"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}},
	} {
		if err := env.Client.Create(context.Background(), obj); err != nil {
			t.Fatalf("create %T: %v", obj, err)
		}
	}
	managed := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"limitranges"}, Verbs: []string{"get", "create", "update", "patch", "delete"}},
	}
	ctx := context.Background()
	for suffix, rules := range map[string][]rbacv1.PolicyRule{"-controller": controllerRole.Rules, "-managed-objects": managed} {
		name := user + suffix
		for _, obj := range []client.Object{
			&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules},
			&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
				Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}},
		} {
			if err := env.Client.Create(ctx, obj); err != nil {
				t.Fatalf("create %T %s: %v", obj, name, err)
			}
			t.Cleanup(func() {
				if err := env.Client.Delete(context.Background(), obj); client.IgnoreNotFound(err) != nil {
					t.Errorf("delete %T %s: %v", obj, name, err)
				}
			})
		}
	}
}

// kubeconfigAs writes the cluster's admin kubeconfig, impersonating user, and
// returns its path.
func kubeconfigAs(t testing.TB, user string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(env.Cluster.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, auth := range cfg.AuthInfos {
		auth.Impersonate = user
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
