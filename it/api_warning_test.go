package it

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// The API server sends warnings with its answers: an API that is deprecated, a
// Pod that PodSecurity's warn mode would refuse. One about a Bundle's template is
// its author's to act on —
// kubectl would have shown it to them — so it becomes a Warning event on the
// Bundle. The scans that read every kind (the start scan, the reaper's full scan
// at start and at every resync) only look through kinds no Bundle may use, and
// log nothing of theirs; and a warning is logged once, not at every request of
// an informer that watches a deprecated kind.
func TestAPIWarningsOfTemplatesAreEventsAndScansLogNone(t *testing.T) {
	env.WithoutController(t)
	ns := env.Namespace(t)
	// A released Secret, due at once. The reaper's full scan at start deletes it,
	// after it has listed Endpoints (it scans kinds in order of resource name).
	createObject(t, ns, map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{
			"name":   "released",
			"labels": map[string]any{limbov1alpha1.LabelBundle: "gone", limbov1alpha1.LabelPendingDeletion: "true"},
			"annotations": map[string]any{
				limbov1alpha1.AnnotationDeletionDelay:     "1s",
				limbov1alpha1.AnnotationDeletionTimestamp: softdelete.FormatStamp(time.Now().Add(-time.Minute)),
				limbov1alpha1.AnnotationReleased:          softdelete.FormatStamp(time.Now().Add(-time.Minute)),
			},
		},
	})
	proc := env.ControllerProcess(t, "warnings", "--namespaces", ns, "--leader-elect=false")
	waitGone(t, secretGVK, ns, "released")
	// The start scan has tried every kind once a teardown has let its Bundle go.
	plain := createBundle(t, ns, "plain", objectResource(t, "cm", configMap("cm", map[string]any{"a": "b"}, nil)))
	waitReady(t, plain)
	if err := env.Client.Delete(context.Background(), plain); err != nil {
		t.Fatalf("delete Bundle: %v", err)
	}
	waitBundleGone(t, plain)
	if lines := logLinesContaining(t, proc.LogPath, "deprecated"); len(lines) > 0 {
		t.Fatalf("the scans logged warnings of kinds no Bundle uses:\n%s", strings.Join(lines, "\n"))
	}

	endpoints := map[string]any{"apiVersion": "v1", "kind": "Endpoints", "metadata": map[string]any{"name": "ep"}}
	warned := createBundle(t, ns, "warned", objectResource(t, "endpoints", endpoints))
	waitEventContaining(t, warned, corev1.EventTypeWarning, limbov1alpha1.EventAPIWarning, `resource "endpoints"`, "Endpoints is deprecated")
	waitReady(t, warned)
	// The informer that watches Endpoints for the Bundle was warned at its list
	// and its watch, the apply once more: one line.
	if lines := logLinesContaining(t, proc.LogPath, "Endpoints is deprecated"); len(lines) != 1 {
		t.Errorf("%d log lines of the Endpoints warning, want 1:\n%s", len(lines), strings.Join(lines, "\n"))
	}
}

// logLinesContaining returns the lines of the log at path that contain s.
func logLinesContaining(t testing.TB, path, s string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read log: %v", err)
	}
	var out []string
	for line := range strings.Lines(string(data)) {
		if strings.Contains(line, s) {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}
