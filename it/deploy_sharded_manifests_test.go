package it

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/limbo-dev/limbo/it/testenv"
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
