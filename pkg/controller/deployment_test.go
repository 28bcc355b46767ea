package controller_test

import (
	"os"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// The install's soft memory limit sits below the container's limit, but not far
// below: under it the runtime collects harder instead of being OOM-killed, and a
// limit below the live heap of a large install would have it collect almost all
// the time.
func TestDeploymentMemoryLimits(t *testing.T) {
	raw, err := os.ReadFile("../../build/deploy/controller/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := yaml.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	c := d.Spec.Template.Spec.Containers[0]
	limit, ok := c.Resources.Limits.Memory().AsInt64()
	if !ok || limit == 0 {
		t.Fatalf("container %s has no memory limit", c.Name)
	}
	var soft int64 = -1
	for _, e := range c.Env {
		if e.Name == "GOMEMLIMIT" {
			soft = goMemLimit(t, e.Value)
		}
	}
	if soft < 0 {
		t.Fatal("no GOMEMLIMIT in the controller's environment")
	}
	if ratio := float64(soft) / float64(limit); ratio < 0.7 || ratio > 0.9 {
		t.Errorf("GOMEMLIMIT is %.0f %% of the container's memory limit, want 70–90 %%", ratio*100)
	}
}

// goMemLimit parses a GOMEMLIMIT value as the Go runtime does (a byte count
// with an optional B, KiB, MiB, GiB or TiB suffix).
func goMemLimit(t *testing.T, v string) int64 {
	t.Helper()
	for i, suffix := range []string{"TiB", "GiB", "MiB", "KiB", "B"} {
		if n, ok := strings.CutSuffix(v, suffix); ok {
			f, err := strconv.ParseInt(n, 10, 64)
			if err != nil {
				t.Fatalf("GOMEMLIMIT %q: %v", v, err)
			}
			return f << (10 * (4 - i))
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("GOMEMLIMIT %q: %v", v, err)
	}
	return n
}
