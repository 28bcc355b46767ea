package main

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

func refs(names ...string) []limbov1alpha1.Reference {
	var r []limbov1alpha1.Reference
	for _, n := range names {
		r = append(r, limbov1alpha1.Reference{Resource: n})
	}
	return r
}

func shopBundle() *limbov1alpha1.Bundle {
	return &limbov1alpha1.Bundle{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "shop"},
		Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{
			{Name: "app", References: refs("db-config", "db-secret", "db-config")},
			{Name: "db-config"},
			{Name: "db-secret"},
			{Name: "frontend", References: refs("app")},
			{Name: "storage-ns-gc", Plugin: &limbov1alpha1.PluginResource{Name: "namespace-gc"}},
		}},
		Status: limbov1alpha1.BundleStatus{Resources: []limbov1alpha1.ResourceStatus{
			{Name: "db-config", State: limbov1alpha1.ResourceReady},
			{Name: "db-secret", State: limbov1alpha1.ResourceReady},
			{Name: "app", State: limbov1alpha1.ResourceInProgress},
			{Name: "frontend", State: limbov1alpha1.ResourceBlocked},
		}},
	}
}

func TestGraphText(t *testing.T) {
	f := newFixture(t, nil, shopBundle())
	code, out, errOut := f.run("graph", "shop", "-n", "team-a")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	want := `db-config                                [Ready]
db-secret                                [Ready]
app            <- db-config, db-secret   [InProgress]
frontend       <- app                    [Blocked]
storage-ns-gc                            [Unknown]
`
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

func TestGraphDot(t *testing.T) {
	f := newFixture(t, nil, shopBundle())
	code, out, errOut := f.run("graph", "bundle/shop", "-n", "team-a", "-o", "dot")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	want := `digraph "team-a/shop" {
  "db-config" [label="db-config\nReady"];
  "db-secret" [label="db-secret\nReady"];
  "app" [label="app\nInProgress"];
  "frontend" [label="frontend\nBlocked"];
  "storage-ns-gc" [label="storage-ns-gc\nUnknown"];
  "app" -> "db-config";
  "app" -> "db-secret";
  "frontend" -> "app";
}
`
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

func TestGraphNoDependencies(t *testing.T) {
	b := &limbov1alpha1.Bundle{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "flat"},
		Spec:       limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{{Name: "a"}, {Name: "bb"}}},
	}
	f := newFixture(t, nil, b)
	_, out, _ := f.run("graph", "flat", "-n", "team-a")
	if want := "a    [Unknown]\nbb   [Unknown]\n"; out != want {
		t.Errorf("got %q, want %q", out, want)
	}
}

func TestGraphInvalid(t *testing.T) {
	cycle := shopBundle()
	cycle.Name = "cycle"
	cycle.Spec.Resources[1].References = refs("frontend")
	missing := shopBundle()
	missing.Name = "missing"
	missing.Spec.Resources[3].References = refs("app", "cdn")
	f := newFixture(t, nil, cycle, missing)

	for name, want := range map[string]string{
		"cycle":   "error: bundle team-a/cycle: dependency cycle: app -> db-config -> frontend -> app\n",
		"missing": "error: bundle team-a/missing: resource \"frontend\" references missing resource \"cdn\"\n",
		"absent":  "error: bundles.limbo.dev \"absent\" not found\n",
		// Another type than Bundle is refused, not read as a Bundle.
		"configmap/cycle": "error: expected a Bundle, got configmap/cycle\n",
	} {
		for _, format := range []string{"text", "dot"} {
			code, out, errOut := f.run("graph", name, "-n", "team-a", "-o", format)
			if code != 1 || out != "" || errOut != want {
				t.Errorf("%s -o %s: exit %d, stdout %q, stderr %q, want %q", name, format, code, out, errOut, want)
			}
		}
	}
	code, _, errOut := f.run("graph", "shop", "-o", "svg")
	if code != 1 || errOut != "error: unsupported output format \"svg\": use text or dot\n" {
		t.Errorf("-o svg: exit %d, stderr %q", code, errOut)
	}
}

// Graphviz IDs are quoted, with quotes and backslashes escaped and a newline
// written as \n (a line break in a label).
func TestDotID(t *testing.T) {
	for s, want := range map[string]string{
		"app":         `"app"`,
		"team-a/shop": `"team-a/shop"`,
		"app\nReady":  `"app\nReady"`,
		`say "hi"`:    `"say \"hi\""`,
		`a\b`:         `"a\\b"`,
	} {
		if got := dotID(s); got != want {
			t.Errorf("dotID(%q) = %s, want %s", s, got, want)
		}
	}
}
