package it

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/limbo-dev/limbo/it/testenv"
)

// The install manifests in build/deploy build with kustomize and are accepted by a
// real API server (server-side dry run), so a broken manifest fails CI.
func TestDeployManifestsDryRun(t *testing.T) {
	out := dryRunApply(t, filepath.Join(env.RepoRoot, "build", "deploy"))
	for _, want := range []string{
		"customresourcedefinition.apiextensions.k8s.io/bundles.limbo.dev serverside-applied (server dry run)",
		"deployment.apps/limbo-controller serverside-applied (server dry run)",
		"clusterrole.rbac.authorization.k8s.io/limbo-managed-objects serverside-applied (server dry run)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// dryRunApply runs `kubectl apply --server-side --dry-run=server -k dir` and
// returns its output.
func dryRunApply(t testing.TB, dir string) string {
	t.Helper()
	ctx := testenv.Context(t, testenv.DefaultTimeout)
	// A dry run cannot create the namespace that the other manifests go into.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "limbo-system"}}
	if err := env.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	kubectl := filepath.Join(env.RepoRoot, "bin", "kubectl")
	cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig", env.Cluster.KubeconfigPath,
		"apply", "--server-side", "--dry-run=server", "-k", dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply --dry-run=server -k %s: %v\n%s", dir, err, out)
	}
	return string(out)
}
