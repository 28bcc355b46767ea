package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/limbo-dev/limbo/"

// kubectl-limbo carries no metric registration: it links neither the manager
// nor the plugin registry, which register limbo's metrics when they are built,
// and every limbo package it links is one the controller links too, which
// pkg/controller's TestImportingRegistersNothing shows register nothing when
// imported.
func TestLinksNoMetricRegistration(t *testing.T) {
	cli := limboDeps(t, ".")
	controller := limboDeps(t, "../../pkg/controller")
	if len(cli) == 0 || len(controller) == 0 {
		t.Fatalf("go list found no limbo package (kubectl-limbo: %d, controller: %d)", len(cli), len(controller))
	}
	for _, registering := range []string{module + "pkg/controller", module + "pkg/plugins"} {
		if slices.Contains(cli, registering) {
			t.Errorf("kubectl-limbo links %s, which registers metrics", registering)
		}
	}
	for _, p := range cli {
		if p != module+"cmd/kubectl-limbo" && !slices.Contains(controller, p) {
			t.Errorf("kubectl-limbo links %s, which the import test of pkg/controller does not cover", p)
		}
	}
}

// limboDeps lists the packages of this module that pkg links, itself included.
func limboDeps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	var deps []string
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, module) {
			deps = append(deps, p)
		}
	}
	return deps
}
