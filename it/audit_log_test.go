package it

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// The controller's log is the audit trail: `limbo controller` logs JSON at info
// by default, and every stamp, cancel and deletion is a line with the Bundle, the
// resource, the object, its UID and the deadline. The test finds each deletion
// in the log: an orphan's (by the Bundle's pass) and a released object's (by the
// reaper), the stamp of the object the Bundle's teardown released, and the stamp
// and cancel of an object that came back.
func TestAuditLogRecordsEveryDeletion(t *testing.T) {
	env.WithoutController(t)
	ns := env.Namespace(t)
	proc := env.ControllerProcess(t, "audit", "--namespaces", ns, "--leader-elect=false") // the default log format and level
	// keep's delay is long enough to read its stamp before the reaper deletes it.
	const doomedDelay, backDelay, keepDelay = 2 * time.Second, time.Hour, 3 * time.Second
	withDelay := func(name string, d time.Duration) limbov1alpha1.Resource {
		return objectResource(t, name, configMap(name, map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: d.String()}))
	}
	keep, doomed, back := withDelay("keep", keepDelay), withDelay("doomed", doomedDelay), withDelay("back", backDelay)
	b := createBundle(t, ns, "audit", keep, doomed, back)
	waitReady(t, b)
	uids := map[string]string{}
	for _, name := range []string{"keep", "doomed", "back"} {
		uids[name] = string(getObject(t, configMapGVK, ns, name).GetUID())
	}
	bundleKey := ns + "/audit"

	updateBundle(t, b, keep)
	_, doomedStamp := waitInLimbo(t, configMapGVK, ns, "doomed")
	_, backStamp := waitInLimbo(t, configMapGVK, ns, "back")
	updateBundle(t, b, keep, back)
	waitObject(t, configMapGVK, ns, "back", notInLimbo)
	waitGone(t, configMapGVK, ns, "doomed")

	// The reaper: the Bundle's teardown releases keep (it has a delay).
	if err := env.Client.Delete(context.Background(), b); err != nil {
		t.Fatalf("delete Bundle: %v", err)
	}
	_, keepStamp := waitInLimbo(t, configMapGVK, ns, "keep")
	waitGone(t, configMapGVK, ns, "keep")

	for _, want := range []auditLine{
		{msg: "stamped", bundle: bundleKey, resource: "doomed", object: "doomed", uid: uids["doomed"], deadline: doomedStamp.Add(doomedDelay)},
		{msg: "deleted", bundle: bundleKey, resource: "doomed", object: "doomed", uid: uids["doomed"], deadline: doomedStamp.Add(doomedDelay)},
		{msg: "stamped", bundle: bundleKey, resource: "back", object: "back", uid: uids["back"], deadline: backStamp.Add(backDelay)},
		{msg: "cancelled", bundle: bundleKey, resource: "back", object: "back", uid: uids["back"]},
		// The teardown's release names the resource, as the pass's stamps do.
		{msg: "stamped", bundle: bundleKey, resource: "keep", object: "keep", uid: uids["keep"], deadline: keepStamp.Add(keepDelay)},
		// The reaper knows the Bundle (its label) but not the resource; its
		// line has the deadline too (DESIGN §6: every deletion line does).
		{msg: "deleted", bundle: bundleKey, object: "keep", uid: uids["keep"], anyResource: true, deadline: keepStamp.Add(keepDelay)},
	} {
		testenv.Eventually(t, testenv.DefaultTimeout, func() error { return findAuditLine(proc.LogPath, ns, want) })
	}
	// One deletion, one line: nothing is deleted twice.
	if n := countAuditLines(t, proc.LogPath, ns, auditLine{msg: "deleted", bundle: bundleKey, resource: "doomed", object: "doomed", uid: uids["doomed"], anyDeadline: true}); n != 1 {
		t.Errorf("%d deleted lines for doomed, want 1", n)
	}
}

// auditLine is what an audit log line must say.
type auditLine struct {
	msg, bundle, resource, object, uid string
	// deadline is compared when set (a cancel has none to tell).
	deadline time.Time
	// anyResource accepts any resource (the reaper's lines may leave it empty).
	anyResource, anyDeadline bool
}

func (a auditLine) String() string {
	return fmt.Sprintf("msg=%q bundle=%q resource=%q object=.../%s uid=%s deadline=%s", a.msg, a.bundle, a.resource, a.object, a.uid, a.deadline.Format(time.RFC3339))
}

// matches reports whether a JSON log line says what a wants. The object is
// "<apiVersion>/<Kind> <namespace>/<name>".
func (a auditLine) matches(line map[string]any, ns string) bool {
	str := func(k string) string { s, _ := line[k].(string); return s }
	if str("msg") != a.msg || str("bundle") != a.bundle || str("uid") != a.uid ||
		!strings.HasSuffix(str("object"), "ConfigMap "+ns+"/"+a.object) {
		return false
	}
	if !a.anyResource && str("resource") != a.resource {
		return false
	}
	if !a.deadline.IsZero() && !a.anyDeadline {
		d, err := time.Parse(time.RFC3339, str("deadline"))
		if err != nil || !d.Equal(a.deadline) {
			return false
		}
	}
	return true
}

// logLines parses the JSON lines of a log file (other lines are skipped).
func logLines(path string) ([]map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) == nil {
			out = append(out, line)
		}
	}
	return out, sc.Err()
}

func findAuditLine(path, ns string, want auditLine) error {
	lines, err := logLines(path)
	if err != nil {
		return err
	}
	var audit []string
	for _, line := range lines {
		if want.matches(line, ns) {
			return nil
		}
		if _, ok := line["object"]; ok {
			audit = append(audit, fmt.Sprint(line))
		}
	}
	return fmt.Errorf("no log line %s among %d JSON lines; lines with an object: %q", want, len(lines), audit)
}

func countAuditLines(t testing.TB, path, ns string, want auditLine) int {
	t.Helper()
	lines, err := logLines(path)
	if err != nil {
		t.Fatalf("read log: %v", err)
	}
	n := 0
	for _, line := range lines {
		if want.matches(line, ns) {
			n++
		}
	}
	return n
}
