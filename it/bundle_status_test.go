package it

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A Bundle's status follows kstatus: Reconciling while resources are on their
// way, Ready once all are, Stalled when one is in error; status.resourcesReady
// counts. kubectl reads it: `kubectl wait --for=condition=...` and the printer
// columns of `kubectl get bundles`.
func TestStatusConditions(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	engine := objectResource(t, "engine", gadget("engine"))
	dash := objectResource(t, "dash", configMap("dash", map[string]any{"k": "v"}, nil), limbov1alpha1.Reference{Resource: "engine"})
	b := createBundle(t, ns, "status", engine, dash)

	// In progress: Reconciling, not Ready, not Stalled.
	progressing := `waiting for engine (InProgress), dash (Blocked)`
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if err := kstatusIs(cur, kstatus.InProgressStatus, progressing); err != nil {
			return err
		}
		// The Ready condition's message is the MESSAGE column.
		if err := conditionMessageIs(cur, "Ready", metav1.ConditionFalse, "Progressing", progressing); err != nil {
			return err
		}
		if cur.Status.ResourcesReady != "0/2" {
			return fmt.Errorf("resourcesReady = %q, want 0/2", cur.Status.ResourcesReady)
		}
		return nil
	})
	kubectlWait(t, ns, "status", "Reconciling")
	getBundles(t, ns, "status", "False", "0/2", "0")

	// Ready.
	setGadgetPhase(t, ns, "engine", "Running")
	kubectlWait(t, ns, "status", "Ready")
	ready := waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if err := kstatusIs(cur, kstatus.CurrentStatus, ""); err != nil {
			return err
		}
		return conditionMessageIs(cur, "Ready", metav1.ConditionTrue, "Ready", "2 resources ready")
	})
	if ready.Status.ResourcesReady != "2/2" {
		t.Errorf("resourcesReady = %q, want 2/2", ready.Status.ResourcesReady)
	}
	for _, c := range ready.Status.Conditions {
		if c.ObservedGeneration != ready.Generation {
			t.Errorf("condition %s observes generation %d, not %d", c.Type, c.ObservedGeneration, ready.Generation)
		}
	}
	getBundles(t, ns, "status", "True", "2/2", "0")

	// A resource in error: Stalled, not Ready, not Reconciling.
	createObject(t, ns, configMap("taken", map[string]any{"k": "theirs"}, nil))
	updateBundle(t, b, engine, dash, objectResource(t, "taken", configMap("taken", map[string]any{"k": "v"}, nil)))
	stalled := waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		msg := `resource "taken": ` + notOwnedMessage
		if err := kstatusIs(cur, kstatus.FailedStatus, msg); err != nil {
			return err
		}
		return conditionMessageIs(cur, "Ready", metav1.ConditionFalse, "ResourceError", msg)
	})
	if stalled.Status.ResourcesReady != "2/3" {
		t.Errorf("resourcesReady = %q, want 2/3", stalled.Status.ResourcesReady)
	}
	if stalled.Status.ObservedGeneration != stalled.Generation {
		t.Errorf("observedGeneration = %d, want %d", stalled.Status.ObservedGeneration, stalled.Generation)
	}
	kubectlWait(t, ns, "status", "Stalled")
	getBundles(t, ns, "status", "False", "2/3", "0")
	out, err := kubectl(t, "get", "bundle", "status", "-n", ns, "-o", "wide")
	if err != nil {
		t.Fatalf("kubectl get bundle -o wide: %v\n%s", err, out)
	}
	if header := strings.Fields(strings.SplitN(out, "\n", 2)[0]); header[len(header)-1] != "MESSAGE" || !strings.Contains(out, `resource "taken"`) {
		t.Errorf("kubectl get bundle -o wide has no MESSAGE column with the Ready condition's message:\n%s", out)
	}

	// Each condition is there exactly once, with a reason (kstatus reads them).
	seen := map[string]bool{}
	for _, c := range stalled.Status.Conditions {
		if seen[c.Type] {
			t.Errorf("condition %s appears twice", c.Type)
		}
		seen[c.Type] = true
		if c.Reason == "" || c.LastTransitionTime.IsZero() {
			t.Errorf("condition %+v lacks a reason or a transition time", c)
		}
	}
	if meta.FindStatusCondition(stalled.Status.Conditions, "Ready") == nil {
		t.Error("no Ready condition")
	}
}

// kstatusIs computes b's status as kstatus (and so Flux, Argo CD and
// `kubectl wait`-style tooling) reads it and compares it with want; a non-empty
// message must match too.
func kstatusIs(b *limbov1alpha1.Bundle, want kstatus.Status, message string) error {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(b)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(limbov1alpha1.BundleGVK)
	res, err := kstatus.Compute(u)
	if err != nil {
		return fmt.Errorf("kstatus: %w", err)
	}
	if res.Status != want || (message != "" && res.Message != message) {
		return fmt.Errorf("kstatus: %s %q, want %s %q", res.Status, res.Message, want, message)
	}
	return nil
}

// kubectlWait runs `kubectl wait --for=condition=<cond> bundle/<name>`.
func kubectlWait(t testing.TB, ns, name, cond string) {
	t.Helper()
	out, err := kubectl(t, "wait", "-n", ns, "--for=condition="+cond, "--timeout="+testenv.DefaultTimeout.String(), "bundle/"+name)
	if err != nil {
		t.Fatalf("kubectl wait --for=condition=%s: %v\n%s", cond, err, out)
	}
	if want := fmt.Sprintf("bundle.limbo.dev/%s condition met", name); !strings.Contains(out, want) {
		t.Errorf("kubectl wait said %q, want %q", out, want)
	}
}

// getBundles asserts the READY, RESOURCES and PENDING columns of name in kubectl
// get bundles (PENDING shows 0, not blank, before anything was in limbo).
func getBundles(t testing.TB, ns, name, ready, resources, pending string) {
	t.Helper()
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		out, err := kubectl(t, "get", "bundles", "-n", ns, "--no-headers")
		if err != nil {
			return fmt.Errorf("kubectl get bundles: %v: %s", err, out)
		}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			fields := strings.Fields(line)
			if len(fields) >= 4 && fields[0] == name {
				if fields[1] != ready || fields[2] != resources || fields[3] != pending {
					return fmt.Errorf("kubectl get bundles: %q, want READY %s, RESOURCES %s and PENDING %s", line, ready, resources, pending)
				}
				return nil
			}
		}
		return fmt.Errorf("kubectl get bundles does not list %s: %q", name, out)
	})
}

func kubectl(t testing.TB, args ...string) (string, error) {
	t.Helper()
	// Longer than the longest --timeout given (kubectlWait's), so that kubectl
	// reports its own timeout.
	ctx, cancel := context.WithTimeout(context.Background(), testenv.DefaultTimeout+30*time.Second)
	defer cancel()
	args = append([]string{"--kubeconfig", env.Cluster.KubeconfigPath}, args...)
	out, err := exec.CommandContext(ctx, filepath.Join(env.RepoRoot, "bin", "kubectl"), args...).CombinedOutput()
	return string(out), err
}
