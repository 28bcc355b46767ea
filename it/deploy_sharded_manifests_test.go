package it

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// The sharded install (build/deploy-sharded) builds and is accepted by a real API
// server; its two Deployments select the two shards (and only them), elect their
// leaders through separate Leases, and do not select each other's Pods.
func TestDeployShardedManifests(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(env.RepoRoot, "build", "deploy-sharded")
	out := dryRunApply(t, dir)
	for _, want := range []string{
		"deployment.apps/limbo-controller serverside-applied (server dry run)",
		"deployment.apps/limbo-controller-shard-a serverside-applied (server dry run)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	ctx := testenv.Context(t, testenv.DefaultTimeout)
	built, err := exec.CommandContext(ctx, filepath.Join(env.RepoRoot, "bin", "kubectl"), "kustomize", dir).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v", dir, err)
	}
	deployments := map[string]*appsv1.Deployment{}
	for _, doc := range strings.Split(string(built), "\n---\n") {
		var d appsv1.Deployment
		if err := yaml.Unmarshal([]byte(doc), &d); err == nil && d.Kind == "Deployment" {
			deployments[d.Name] = &d
		}
	}
	for name, want := range map[string]struct{ selector, lease string }{
		"limbo-controller":         {selector: "!limbo.dev/shard", lease: ""},
		"limbo-controller-shard-a": {selector: "limbo.dev/shard=a", lease: "limbo-controller-shard-a"},
	} {
		d := deployments[name]
		if d == nil {
			t.Fatalf("no Deployment %s in %v", name, deployments)
		}
		args := d.Spec.Template.Spec.Containers[0].Args
		if got := flagValues(args, "--watch-label-selector"); len(got) != 1 || got[0] != want.selector {
			t.Errorf("%s: --watch-label-selector %q, want exactly %q", name, got, want.selector)
		}
		if got := flagValues(args, "--leader-election-id"); want.lease != "" && (len(got) != 1 || got[0] != want.lease) {
			t.Errorf("%s: --leader-election-id %q, want %q", name, got, want.lease)
		} else if want.lease == "" && len(got) != 0 {
			t.Errorf("%s: --leader-election-id %q, want the default", name, got)
		}
	}
	for name, d := range deployments {
		sel := labels.SelectorFromSet(d.Spec.Selector.MatchLabels)
		for other, o := range deployments {
			if other != name && sel.Matches(labels.Set(o.Spec.Template.Labels)) {
				t.Errorf("Deployment %s selects the Pods of %s", name, other)
			}
		}
	}
}

// flagValues returns the values of every --name=value in args.
func flagValues(args []string, name string) []string {
	var out []string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			out = append(out, v)
		}
	}
	return out
}

// The sharded install's admission policy sets the teardown finalizer only on
// the Bundles of a deployed shard: one labelled limbo.dev/shard=b, a shard no
// controller runs, would otherwise hang on its deletion with a finalizer
// nothing removes. The built policy's matchConditions are checked by a real API
// server: a copy of the policy, scoped to this test's namespace and setting a
// finalizer of its own (the shipped policy sets limbo.dev/teardown on every
// Bundle of the test cluster), admits dry-run creates.
func TestShardedAdmissionPolicySkipsUndeployedShards(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	ctx := testenv.Context(t, testenv.DefaultTimeout)
	dir := filepath.Join(env.RepoRoot, "build", "deploy-sharded")
	built, err := exec.CommandContext(ctx, filepath.Join(env.RepoRoot, "bin", "kubectl"), "kustomize", dir).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v", dir, err)
	}
	var policy *unstructured.Unstructured
	for _, doc := range strings.Split(string(built), "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err == nil && u.GetKind() == "MutatingAdmissionPolicy" && u.GetName() == "limbo-bundle-teardown-finalizer" {
			policy = u
		}
	}
	if policy == nil {
		t.Fatalf("the sharded build has no MutatingAdmissionPolicy limbo-bundle-teardown-finalizer")
	}
	conditions, _, _ := unstructured.NestedSlice(policy.Object, "spec", "matchConditions")
	if len(conditions) == 0 {
		t.Fatalf("the sharded build's admission policy has no matchConditions: it would set the finalizer on every Bundle")
	}

	const marker = "test.limbo.dev/sharded-policy"
	name := "limbo-sharded-" + ns
	policy.SetName(name)
	for _, field := range []string{"resourceVersion", "uid", "creationTimestamp"} {
		unstructured.RemoveNestedField(policy.Object, "metadata", field)
	}
	if err := unstructured.SetNestedField(policy.Object, map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": ns}},
		"spec", "matchConstraints", "namespaceSelector"); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedSlice(policy.Object, []any{map[string]any{"patchType": "ApplyConfiguration", "applyConfiguration": map[string]any{
		"expression": fmt.Sprintf("Object{metadata: Object.metadata{finalizers: [%q]}}", marker)}}}, "spec", "mutations"); err != nil {
		t.Fatal(err)
	}
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding",
		"metadata": map[string]any{"name": name}, "spec": map[string]any{"policyName": name}}}
	for _, obj := range []*unstructured.Unstructured{policy, binding} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatalf("create %s %s: %v", obj.GetKind(), name, err)
		}
		t.Cleanup(func() {
			if err := env.Client.Delete(context.Background(), obj); client.IgnoreNotFound(err) != nil {
				t.Errorf("delete %s %s: %v", obj.GetKind(), name, err)
			}
		})
	}

	admitted := func(shard string) (bool, error) {
		b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"}, Spec: limbov1alpha1.BundleSpec{AllowEmpty: true}}
		if shard != "" {
			b.Labels = map[string]string{"limbo.dev/shard": shard}
		}
		if err := env.Client.Create(context.Background(), b, client.DryRunAll); err != nil {
			return false, err
		}
		return slices.Contains(b.Finalizers, marker), nil
	}
	// The policy is loaded asynchronously: wait until an unlabelled Bundle gets it.
	testenv.Eventually(t, time.Minute, func() error {
		if got, err := admitted(""); err != nil || !got {
			return fmt.Errorf("an unlabelled Bundle is admitted without the finalizer (%v): the policy is not active yet", err)
		}
		return nil
	})
	for shard, want := range map[string]bool{"a": true, "b": false} {
		got, err := admitted(shard)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("a Bundle of shard %q is admitted with the finalizer: %v, want %v", shard, got, want)
		}
	}

	// The monitoring component scrapes the Pods of every shard.
	monitor := readManifests(t, filepath.Join(env.RepoRoot, "build", "deploy", "monitoring", "podmonitor.yaml"))[0]
	selector, _, _ := unstructured.NestedStringMap(monitor.Object, "spec", "selector", "matchLabels")
	for _, doc := range strings.Split(string(built), "\n---\n") {
		var d appsv1.Deployment
		if err := yaml.Unmarshal([]byte(doc), &d); err != nil || d.Kind != "Deployment" {
			continue
		}
		if !labels.SelectorFromSet(selector).Matches(labels.Set(d.Spec.Template.Labels)) {
			t.Errorf("the PodMonitor selects %v; the Pods of Deployment %s are labelled %v", selector, d.Name, d.Spec.Template.Labels)
		}
	}
}
