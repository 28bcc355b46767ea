package it

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// kubectlLimbo runs the kubectl-limbo binary against the test cluster.
type kubectlLimbo struct {
	bin, cacheDir string
}

// newKubectlLimbo runs cmd/kubectl-limbo, built for the test package, with a
// discovery cache of the test's own.
func newKubectlLimbo(t *testing.T) *kubectlLimbo {
	t.Helper()
	return &kubectlLimbo{bin: env.Binary(t, "kubectl-limbo"), cacheDir: t.TempDir()}
}

// run runs `kubectl-limbo args... --kubeconfig <the test cluster's>` and returns
// its stdout, stderr and exit code.
func (k *kubectlLimbo) run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return k.exec(t, k.bin, append(args, "--kubeconfig", env.Cluster.KubeconfigPath)...)
}

func (k *kubectlLimbo) exec(t *testing.T, name string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testenv.DefaultTimeout)
	defer cancel()
	cmd := k.command(ctx, name, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run %s %v: %v", name, args, err)
	}
	return out.String(), errOut.String(), code
}

// command is the command name args with the test cluster's kubeconfig and
// kubectl-limbo on its PATH; it calls no t method, so that code running off the
// test's goroutine (an interceptor of the controller) can run kubectl-limbo.
func (k *kubectlLimbo) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+k.cacheDir, "KUBECONFIG="+env.Cluster.KubeconfigPath,
		"PATH="+filepath.Dir(k.bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	return cmd
}

// must runs the command and fails the test unless it succeeds.
func (k *kubectlLimbo) must(t *testing.T, args ...string) string {
	t.Helper()
	stdout, stderr, code := k.run(t, args...)
	if code != 0 {
		t.Fatalf("kubectl limbo %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, stdout, stderr)
	}
	return stdout
}

// kubectl limbo against the real API server: pending lists what is in limbo with
// its deadline (Tombstones included), cancel keeps an object, expedite makes its
// deadline now, and graph prints a Bundle's dependency graph.
func TestKubectlLimbo(t *testing.T) {
	t.Parallel()
	k := newKubectlLimbo(t)
	ns := env.Namespace(t)
	domain := external.Domain(ns)
	domain.Set("live-item", true)
	domain.Set("old-item", false)
	// y's countdown must outlast the waits for x and y in limbo and the cancel
	// subtest, whose kubectl-limbo runs a full discovery first: the stamp is
	// rounded to the second, and the machine may be loaded.
	const shortDelay = 25 * time.Second
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil))
	items := pluginResource("items", ns, "1h")
	b := createBundle(t, ns, "shop", keep, items,
		objectResource(t, "x", configMap("x", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: "1h"})),
		objectResource(t, "y", configMap("y", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: shortDelay.String()})))
	b = waitReady(t, b)
	ts := waitOneTombstone(t, ns, "old-item")

	updateBundle(t, b, keep, items)
	xObj, xStamp := waitInLimbo(t, configMapGVK, ns, "x")
	yObj, yStamp := waitInLimbo(t, configMapGVK, ns, "y")
	xDeadline, yDeadline := xStamp.Add(time.Hour), yStamp.Add(shortDelay)

	// First, as y's countdown is short.
	t.Run("cancel", func(t *testing.T) {
		// Timed before the command, with a margin for a delete decided a
		// moment before it: y deleted first would fail the command, saying
		// nothing of why.
		if time.Now().After(yDeadline.Add(-1500 * time.Millisecond)) {
			t.Fatalf("the test was too slow: the cancel runs within 1.5 s of y's deadline %s", yDeadline)
		}
		stdout := k.must(t, "cancel", "configmap/y", "-n", ns)
		want := `configmap/y: deletion cancelled; removed owner reference to Bundle "shop", annotation limbo.dev/deletionTimestamp, label limbo.dev/pending-deletion=true, label limbo.dev/bundle=shop.
No Bundle manages it now; to bring it back under a Bundle, declare it there with the annotation limbo.dev/adopt: "true".
`
		if stdout != want {
			t.Errorf("stdout:\n%s\nwant:\n%s", stdout, want)
		}
		y := getObject(t, configMapGVK, ns, "y")
		if err := notInLimbo(y); err != nil {
			t.Error(err)
		}
		if len(y.GetOwnerReferences()) != 0 || y.GetLabels()[limbov1alpha1.LabelBundle] != "" {
			t.Errorf("y still belongs to the Bundle: owner references %v, labels %v", y.GetOwnerReferences(), y.GetLabels())
		}
		if y.GetAnnotations()[limbov1alpha1.AnnotationDeletionDelay] != shortDelay.String() {
			t.Errorf("cancel removed the delay: annotations %v", y.GetAnnotations())
		}
		// Not in limbo any more: nothing to expedite, nothing to cancel.
		_, stderr, code := k.run(t, "expedite", "configmap/y", "-n", ns)
		if want := "error: configmap/y is not in limbo: it has no limbo.dev/deletionTimestamp annotation, so no deletion is scheduled\n"; code != 1 || stderr != want {
			t.Errorf("expedite configmap/y: exit %d, stderr %q; want 1, %q", code, stderr, want)
		}
	})

	t.Run("pending", func(t *testing.T) {
		// The Bundle has forgotten y.
		waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error { return notListed(cur, "ConfigMap", "y") })
		var list struct {
			Now   time.Time `json:"now"`
			Items []struct {
				Namespace, APIVersion, Kind, Name, Bundle, DeletionDelay, DeletionTimestamp, TimeLeft, Message string
				DeleteAfter                                                                                    *time.Time
			} `json:"items"`
		}
		if err := json.Unmarshal([]byte(k.must(t, "pending", "-n", ns, "-o", "json")), &list); err != nil {
			t.Fatalf("pending -o json: %v", err)
		}
		if len(list.Items) != 2 {
			t.Fatalf("pending -o json lists %+v, want the Tombstone and ConfigMap x", list.Items)
		}
		byKind := map[string]int{list.Items[0].Kind: 0, list.Items[1].Kind: 1}
		x := list.Items[byKind["ConfigMap"]]
		if x.Namespace != ns || x.APIVersion != "v1" || x.Name != "x" || x.Bundle != "shop" || x.DeletionDelay != "1h" ||
			x.DeletionTimestamp != xObj.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp] ||
			x.DeleteAfter == nil || !x.DeleteAfter.Equal(xDeadline) || x.Message != "" {
			t.Errorf("pending lists x as %+v, want deleted after %s", x, xDeadline)
		}
		tomb := list.Items[byKind["Tombstone"]]
		if tomb.Name != ts.Name || tomb.APIVersion != limbov1alpha1.GroupVersion.String() || tomb.Bundle != "shop" ||
			tomb.Message != `test-external: TestItem "old-item"` || tomb.DeleteAfter == nil {
			t.Errorf("pending lists the Tombstone as %+v", tomb)
		}

		table := k.must(t, "pending", "-n", ns)
		lines := strings.Split(strings.TrimSpace(table), "\n")
		if len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "KIND NAME BUNDLE DELETE-AFTER TIME-LEFT MESSAGE" {
			t.Fatalf("pending prints:\n%s", table)
		}
		found := false
		for _, line := range lines[1:] {
			f := strings.Fields(line)
			if len(f) >= 5 && f[0] == "ConfigMap" && f[1] == "x" {
				found = true
				if f[2] != "shop" || f[3] != xDeadline.UTC().Format(time.RFC3339) || (f[4] != "60m" && f[4] != "59m") {
					t.Errorf("x's row is %q, want bundle shop, deadline %s and about 1h left", line, xDeadline.UTC().Format(time.RFC3339))
				}
			}
		}
		if !found || !strings.Contains(table, ts.Name) || !strings.Contains(table, `test-external: TestItem "old-item"`) {
			t.Errorf("pending prints:\n%s\nwant rows for ConfigMap x and Tombstone %s", table, ts.Name)
		}
		if strings.Contains(table, " y ") {
			t.Errorf("pending still lists the cancelled y:\n%s", table)
		}

		// As a kubectl plugin, with every namespace.
		kubectl := filepath.Join(env.RepoRoot, "bin", "kubectl")
		if _, err := os.Stat(kubectl); err != nil {
			t.Skipf("no %s: %v", kubectl, err)
		}
		all, stderr, code := k.exec(t, kubectl, "limbo", "pending", "-A")
		if code != 0 {
			t.Fatalf("kubectl limbo pending -A: exit %d: %s", code, stderr)
		}
		if header := strings.Fields(strings.SplitN(all, "\n", 2)[0]); len(header) == 0 || header[0] != "NAMESPACE" {
			t.Errorf("kubectl limbo pending -A prints:\n%s\nwant a NAMESPACE column", all)
		}
		for _, want := range []string{ns + " ", ts.Name, xDeadline.UTC().Format(time.RFC3339)} {
			if !strings.Contains(all, want) {
				t.Errorf("kubectl limbo pending -A prints:\n%s\nwant %q in it", all, want)
			}
		}
	})

	// The output options of kubectl get: -o wide, --no-headers, -o name.
	t.Run("output", func(t *testing.T) {
		wide := k.must(t, "pending", "-n", ns, "-o", "wide")
		if header := strings.Join(strings.Fields(strings.SplitN(wide, "\n", 2)[0]), " "); header != "KIND NAME BUNDLE DELETE-AFTER TIME-LEFT DELAY IN-LIMBO MESSAGE" {
			t.Errorf("pending -o wide prints the header %q", header)
		}
		if !regexpMatches(`(?m)^ConfigMap +x +shop +\S+ +\S+ +1h +\d+s\b`, wide) {
			t.Errorf("pending -o wide has no row for x with DELAY 1h and IN-LIMBO in seconds:\n%s", wide)
		}
		noHeaders := k.must(t, "pending", "-n", ns, "--no-headers")
		if lines := strings.Split(strings.TrimSpace(noHeaders), "\n"); len(lines) != 2 || strings.HasPrefix(lines[0], "KIND") {
			t.Errorf("pending --no-headers prints:\n%s\nwant the two rows only", noHeaders)
		}
		want := []string{"tombstone.limbo.dev/" + ts.Name, "configmap/x"}
		names := strings.Fields(k.must(t, "pending", "-n", ns, "-o", "name"))
		if !sameSet(names, want) {
			t.Errorf("pending -o name prints %v, want %v", names, want)
		}
		// -l selects by the labels of the objects and Tombstones, on the API server.
		if selected := strings.Fields(k.must(t, "pending", "-n", ns, "-o", "name", "-l", limbov1alpha1.LabelBundle+"=shop")); !sameSet(selected, want) {
			t.Errorf("pending -o name -l %s=shop prints %v, want %v", limbov1alpha1.LabelBundle, selected, want)
		}
		stdout, stderr, code := k.run(t, "pending", "-n", ns, "-l", limbov1alpha1.LabelBundle+"!=shop")
		if wantErr := fmt.Sprintf("Nothing in limbo with labels %s!=shop in namespace %s.\n", limbov1alpha1.LabelBundle, ns); code != 0 || stdout != "" || stderr != wantErr {
			t.Errorf("pending -l %s!=shop: exit %d, stdout %q, stderr %q; want 0, nothing, %q", limbov1alpha1.LabelBundle, code, stdout, stderr, wantErr)
		}
		// Lists read a page at a time (the API server's continue tokens) lose
		// nothing: the Bundles, two of them at least with a second one here, are
		// more than a page of 1.
		createBundle(t, ns, "second", objectResource(t, "c", configMap("second", map[string]any{"a": "b"}, nil)))
		if paged := strings.Fields(k.must(t, "pending", "-n", ns, "-o", "name", "--chunk-size", "1")); !sameSet(paged, want) {
			t.Errorf("pending -o name --chunk-size 1 prints %v, want %v", paged, want)
		}
	})

	// kubectl completes the plugin's arguments through kubectl_complete-limbo.
	t.Run("completion", func(t *testing.T) {
		kubectl := filepath.Join(env.RepoRoot, "bin", "kubectl")
		script, err := os.ReadFile(filepath.Join(env.RepoRoot, "cmd", "kubectl-limbo", "kubectl_complete-limbo"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(filepath.Dir(k.bin), "kubectl_complete-limbo"), script, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"graph", "-n", ns, ""}, "shop"},
			{[]string{"expedite", "-n", ns, "configmap/"}, "configmap/x"},
			{[]string{"expedite", "-n", ns, "tombstones", ""}, ts.Name},
			{[]string{"cancel", "-n", ns, "configmaps", ""}, "x"},
			{[]string{"pending", "-n", ns[:len(ns)-1]}, ns},
		} {
			stdout, stderr, code := k.exec(t, kubectl, append([]string{"__complete", "limbo"}, tc.args...)...)
			lines := strings.Split(strings.TrimSpace(stdout), "\n")
			if code != 0 || len(lines) == 0 || !strings.HasPrefix(lines[len(lines)-1], ":") {
				t.Fatalf("kubectl __complete limbo %v: exit %d, stdout %q, stderr %q", tc.args, code, stdout, stderr)
			}
			if got := strings.Join(lines[:len(lines)-1], " "); !strings.Contains(" "+got+" ", " "+tc.want+" ") {
				t.Errorf("kubectl __complete limbo %v offers %q, want %q among them", tc.args, got, tc.want)
			}
		}
	})

	t.Run("expedite", func(t *testing.T) {
		gone := watchConfigMapDeletion(t, ns, "x")
		start := time.Now()
		stdout := k.must(t, "expedite", "configmap/x", "-n", ns)
		if !strings.HasPrefix(stdout, "configmap/x expedited: limbo.dev/deletionTimestamp set to ") || !strings.Contains(stdout, "(delay 1h0m0s)") {
			t.Errorf("stdout: %q", stdout)
		}
		at := gone.wait(t, testenv.DefaultTimeout)
		// took includes the start of kubectl-limbo and its discovery, on a machine
		// that may be loaded: the point is that it was not x's 1 h delay.
		if took := at.Sub(start); took > 15*time.Second {
			t.Errorf("x was deleted %v after the expedite", took)
		}
		waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error { return notListed(cur, "ConfigMap", "x") })
	})

	t.Run("graph", func(t *testing.T) {
		g := createBundle(t, ns, "g",
			objectResource(t, "db-config", configMap("db-config", map[string]any{"host": "db"}, nil)),
			objectResource(t, "app", configMap("app", map[string]any{"a": "b"}, nil), limbov1alpha1.Reference{Resource: "db-config"}))
		waitReady(t, g)
		text := k.must(t, "graph", "g", "-n", ns)
		wantText := "db-config                 [Ready]\n" +
			"app        <- db-config   [Ready]\n"
		if text != wantText {
			t.Errorf("graph g prints:\n%q\nwant:\n%q", text, wantText)
		}
		dot := k.must(t, "graph", "bundle/g", "-n", ns, "-o", "dot")
		wantDot := fmt.Sprintf(`digraph "%s/g" {
  "db-config" [label="db-config\nReady"];
  "app" [label="app\nReady"];
  "app" -> "db-config";
}
`, ns)
		if dot != wantDot {
			t.Errorf("graph -o dot prints:\n%s\nwant:\n%s", dot, wantDot)
		}
		_, stderr, code := k.run(t, "graph", "nothere", "-n", ns)
		if code != 1 || !strings.HasPrefix(stderr, "error: ") || !strings.Contains(stderr, "not found") {
			t.Errorf("graph of a missing Bundle: exit %d, stderr %q", code, stderr)
		}
	})

	// The cancelled y outlives its old deadline.
	testenv.Consistently(t, time.Until(yDeadline)+2*time.Second, existsWithUID(t, configMapGVK, ns, "y", string(yObj.GetUID())))
	if err := notInLimbo(getObjectOrEmpty(t, ns, "y")); err != nil {
		t.Error(err)
	}
}

// notListed fails while the Bundle's pendingDeletions lists the object.
func notListed(b *limbov1alpha1.Bundle, kind, name string) error {
	for _, pd := range b.Status.PendingDeletions {
		if pd.Kind == kind && pd.Name == name {
			return fmt.Errorf("pendingDeletions still lists %s %s: %+v", kind, name, b.Status.PendingDeletions)
		}
	}
	return nil
}

func regexpMatches(pattern, s string) bool { return regexp.MustCompile(pattern).MatchString(s) }

// sameSet tells whether a and b hold the same strings, in any order.
func sameSet(a, b []string) bool {
	return len(a) == len(b) && strings.Join(slices.Sorted(slices.Values(a)), " ") == strings.Join(slices.Sorted(slices.Values(b)), " ")
}
