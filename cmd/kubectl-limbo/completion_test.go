package main

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// complete runs cobra's __complete, as kubectl_complete-limbo and the shell
// scripts do, and returns the candidates (without the directive line).
func (f *fixture) complete(t *testing.T, args ...string) []string {
	t.Helper()
	code, out, errOut := f.run(append([]string{"__complete"}, args...)...)
	if code != 0 {
		t.Fatalf("__complete %v: exit %d, stderr %q", args, code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if directive := lines[len(lines)-1]; directive != ":4" {
		t.Errorf("__complete %v: directive %q, want :4 (no file completion)", args, directive)
	}
	return lines[:len(lines)-1]
}

func TestCompletion(t *testing.T) {
	objects := append(pendingObjects(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
	)
	f := newFixture(t, nil, objects...)
	for _, tc := range []struct {
		args []string
		want string
	}{
		// Bundle names, in the namespace of -n.
		{[]string{"-n", "team-a", "graph", ""}, "shop"},
		{[]string{"-n", "team-a", "graph", "x"}, ""},
		{[]string{"graph", ""}, ""},
		// Namespaces, for every command.
		{[]string{"pending", "-n", ""}, "default team-a team-b"},
		{[]string{"graph", "--namespace", "team-"}, "team-a team-b"},
		// Resource types, then the objects of that type in limbo.
		{[]string{"expedite", ""}, "configmaps secrets deployments.apps bundles.limbo.dev tombstones.limbo.dev"},
		{[]string{"cancel", "deploy"}, "deployments.apps"},
		{[]string{"-n", "team-a", "expedite", "cm/"}, "cm/cache cm/db-config cm/negative"},
		{[]string{"-n", "team-a", "expedite", "configmap/d"}, "configmap/db-config"},
		{[]string{"-n", "team-a", "cancel", "configmaps", ""}, "cache db-config negative"},
		{[]string{"-n", "team-a", "expedite", "tombstone", ""}, "storage-ns-gc-4f7c"},
		{[]string{"-n", "team-b", "expedite", "cm", ""}, "other"},
		{[]string{"-n", "team-a", "expedite", "gizmo", ""}, ""},
		{[]string{"-n", "team-a", "expedite", "cm", "db-config", ""}, ""},
	} {
		if got := strings.Join(f.complete(t, tc.args...), " "); got != tc.want {
			t.Errorf("completing %q: %q, want %q", tc.args, got, tc.want)
		}
	}
}

// cobra's completion command prints the shell scripts.
func TestCompletionScripts(t *testing.T) {
	f := newFixture(t, nil)
	for shell, want := range map[string]string{
		"bash": "# bash completion V2 for kubectl-limbo",
		"zsh":  "#compdef kubectl-limbo",
		"fish": "# fish completion for kubectl-limbo",
	} {
		code, out, errOut := f.run("completion", shell)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("completion %s: exit %d, stderr %q, no %q in the script", shell, code, errOut, want)
		}
	}
}
