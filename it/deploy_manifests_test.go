package it

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/limbo-dev/limbo/it/testenv"
)

// The install manifests in build/deploy build with kustomize and are accepted by a
// real API server (server-side dry run), so a broken manifest fails CI.
func TestDeployManifestsDryRun(t *testing.T) {
	t.Parallel()
	out := dryRunApply(t, filepath.Join(env.RepoRoot, "build", "deploy"))
	for _, want := range []string{
		"customresourcedefinition.apiextensions.k8s.io/bundles.limbo.dev serverside-applied (server dry run)",
		"deployment.apps/limbo-controller serverside-applied (server dry run)",
		"poddisruptionbudget.policy/limbo-controller serverside-applied (server dry run)",
		"clusterrole.rbac.authorization.k8s.io/limbo-managed-objects serverside-applied (server dry run)",
		"mutatingadmissionpolicy.admissionregistration.k8s.io/limbo-bundle-teardown-finalizer serverside-applied (server dry run)",
		"mutatingadmissionpolicybinding.admissionregistration.k8s.io/limbo-bundle-teardown-finalizer serverside-applied (server dry run)",
		"mutatingadmissionpolicy.admissionregistration.k8s.io/limbo-bundle-teardown-finalizer-kept serverside-applied (server dry run)",
		"mutatingadmissionpolicybinding.admissionregistration.k8s.io/limbo-bundle-teardown-finalizer-kept serverside-applied (server dry run)",
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

// The optional monitoring component (build/deploy/monitoring) builds on top of
// the install: a metrics Service, a PodMonitor, the alerts' PrometheusRule and
// the Grafana dashboard's ConfigMap; the Service is accepted by a real API
// server.
func TestMonitoringComponent(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t, testenv.DefaultTimeout)
	// An install's kustomization, as docs/install.md shows it; kustomize wants
	// relative paths.
	overlay := t.TempDir()
	deploy, err := filepath.Rel(overlay, filepath.Join(env.RepoRoot, "build", "deploy"))
	if err != nil {
		t.Fatal(err)
	}
	kustomization := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" +
		"resources:\n- " + deploy + "\n" +
		"components:\n- " + filepath.Join(deploy, "monitoring") + "\n"
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		t.Fatal(err)
	}
	kubectl := filepath.Join(env.RepoRoot, "bin", "kubectl")
	out, err := exec.CommandContext(ctx, kubectl, "kustomize", overlay).Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			err = fmt.Errorf("%w: %s", err, exit.Stderr)
		}
		t.Fatalf("kubectl kustomize (build/deploy + build/deploy/monitoring): %v", err)
	}
	objects := map[string]*unstructured.Unstructured{}
	for _, doc := range strings.Split(string(out), "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("%v in\n%s", err, doc)
		}
		objects[u.GetKind()+"/"+u.GetName()] = u
	}
	for _, want := range []string{"Deployment/limbo-controller", "Service/limbo-controller-metrics", "PodMonitor/limbo-controller", "PrometheusRule/limbo", "ConfigMap/limbo-grafana-dashboard"} {
		u := objects[want]
		if u == nil {
			t.Fatalf("the build has no %s", want)
		}
		if u.GetNamespace() != "limbo-system" {
			t.Errorf("%s is in namespace %q, want limbo-system", want, u.GetNamespace())
		}
	}
	dashboard, _, _ := unstructured.NestedString(objects["ConfigMap/limbo-grafana-dashboard"].Object, "data", "limbo-dashboard.json")
	if !json.Valid([]byte(dashboard)) || objects["ConfigMap/limbo-grafana-dashboard"].GetLabels()["grafana_dashboard"] != "1" {
		t.Errorf("the dashboard ConfigMap lacks the sidecar label or valid dashboard JSON")
	}

	// The Service selects the controller's Pods and targets their metrics port.
	service := objects["Service/limbo-controller-metrics"]
	selector, _, _ := unstructured.NestedStringMap(service.Object, "spec", "selector")
	podLabels, _, _ := unstructured.NestedStringMap(objects["Deployment/limbo-controller"].Object, "spec", "template", "metadata", "labels")
	for k, v := range selector {
		if podLabels[k] != v {
			t.Errorf("the metrics Service selects %v, the controller's Pods are labelled %v", selector, podLabels)
		}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "limbo-system"}}
	if err := env.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	serviceYAML, err := yaml.Marshal(service.Object)
	if err != nil {
		t.Fatal(err)
	}
	apply := exec.CommandContext(ctx, kubectl, "--kubeconfig", env.Cluster.KubeconfigPath, "apply", "--server-side", "--dry-run=server", "-f", "-")
	apply.Stdin = bytes.NewReader(serviceYAML)
	if out, err := apply.CombinedOutput(); err != nil {
		t.Errorf("kubectl apply --dry-run=server the metrics Service: %v\n%s", err, out)
	}
}
