package it

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugins/noderemoval"
)

// A controller restart in the middle of a countdown keeps the deadline: the
// stamps stay as they were, and the resources go when it comes, not a delay
// after the restart.
func TestNodeRemovalRestart(t *testing.T) {
	ns := env.Namespace(t)
	n := newCSINode(t, ns, "n1", drainTaint)
	// Long enough for the restart and the restarted controller's first pass to
	// come before the deadline on a loaded machine; a countdown restarted from
	// scratch ends a delay after the restart.
	const delay = 12 * time.Second
	b := nodeRemovalBundle(t, ns, delay.String(), map[string]any{})
	before := n.remove(t, b)
	stamp, err := time.Parse(time.RFC3339, before[0].GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp])
	if err != nil {
		t.Fatal(err)
	}
	deadline := stamp.Add(delay)
	unchanged := func() error {
		for i, u := range n.live(t) {
			if u == nil || u.GetUID() != before[i].GetUID() || u.GetDeletionTimestamp() != nil {
				return fmt.Errorf("%s %s was deleted before its deadline %s", before[i].GetKind(), before[i].GetName(), deadline)
			}
			want := before[i].GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp]
			if got := u.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp]; got != want {
				return fmt.Errorf("%s %s: stamp %q, was %q", u.GetKind(), u.GetName(), got, want)
			}
		}
		return nil
	}

	var restartedAt time.Time
	err = env.RestartController(func() {
		// Down for a while, so that a countdown restarted from scratch would
		// end well after the original deadline.
		testenv.Consistently(t, 5*time.Second, unchanged)
		env.ResetControllerRequests() // from here on, the restarted controller's requests alone
		restartedAt = time.Now()
	})
	if err != nil {
		t.Fatalf("restart the controller: %v", err)
	}
	if restartedAt.After(deadline.Add(-3 * time.Second)) {
		// A machine this loaded proves nothing either way: not a failure.
		t.Skipf("the machine was too slow: restarted at %s, deadline %s", restartedAt, deadline)
	}
	testenv.Consistently(t, time.Until(deadline)-500*time.Millisecond, unchanged)
	// The window must have held the restarted controller's first pass: its
	// plan reads the Csibmnodes whole (its informers read metadata only).
	if plans := env.ControllerRequests(func(r testenv.Request) bool {
		return r.Method == http.MethodGet && !r.Watch && r.Path == "/apis/"+noderemoval.Group+"/"+noderemoval.Version+"/nodes" &&
			!strings.Contains(r.Accept, "PartialObjectMetadata")
	}); len(plans) == 0 {
		t.Skipf("the machine was too slow: the restarted controller ran no plan before the deadline %s (restarted at %s)", deadline, restartedAt)
	}

	for _, o := range n.objects[:4] {
		waitGone(t, o.GroupVersionKind(), o.GetNamespace(), o.GetName())
	}
	// A countdown restamped by the restarted controller (to the second) ends at
	// restartedAt, truncated, plus the delay at the soonest: the original
	// deadline is at least four seconds before (down for five), room for a
	// deletion late on a loaded machine.
	if restarted := restartedAt.Truncate(time.Second).Add(delay); !time.Now().Before(restarted) {
		t.Errorf("the resources were gone only at %s, not before %s (restarted at %s plus the delay): the countdown did not survive the restart; its deadline was %s",
			time.Now(), restarted, restartedAt, deadline)
	}
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if c := n.csibmnode(t); c != nil && c.GetDeletionTimestamp() == nil {
			return fmt.Errorf("Csibmnode not deleted")
		}
		return nil
	})
}
