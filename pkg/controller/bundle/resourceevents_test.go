package bundle

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/tools/record"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
)

// A pass announces each resource that newly went into Error — up to
// maxResourceEvents of them. Past those, one event names the rest: a Bundle of a
// thousand resources that all fail at once (its namespace being deleted, a
// quota) sent a thousand events in one pass, which took the controller's event
// sink a minute under the integration tests' load (an InvalidSpec event of
// another Bundle waited behind them past its test's deadline) and would take
// ~20 s of the client's budget at QPS 50. A resource already in Error with the
// same reason and message is not announced again.
func TestResourceErrorEvents(t *testing.T) {
	failing := func(n int, reason string, first int) []limbov1alpha1.ResourceStatus {
		out := make([]limbov1alpha1.ResourceStatus, n)
		for i := range out {
			name := fmt.Sprintf("cm-%d", first+i)
			out[i] = limbov1alpha1.ResourceStatus{Name: name, State: limbov1alpha1.ResourceError, Reason: reason, Message: fmt.Sprintf("apply ConfigMap %q: refused", name)}
		}
		return out
	}
	ready := []limbov1alpha1.ResourceStatus{{Name: "ok", State: limbov1alpha1.ResourceReady}}
	for _, tc := range []struct {
		name           string
		before, now    []limbov1alpha1.ResourceStatus
		want           []string // event prefixes ("Warning Reason message"), in order
		wantSummaryHas []string // what the last event names, when it sums up
	}{
		{
			name: "a few: one event each",
			now:  append(slices.Clone(ready), failing(2, limbov1alpha1.ReasonForbidden, 0)...),
			want: []string{`Warning Forbidden resource "cm-0": apply ConfigMap "cm-0": refused`, `Warning Forbidden resource "cm-1": apply ConfigMap "cm-1": refused`},
		},
		{
			name:   "already in Error with the same message: nothing",
			before: failing(2, limbov1alpha1.ReasonForbidden, 0),
			now:    failing(2, limbov1alpha1.ReasonForbidden, 0),
		},
		{
			name: "a thousand of one reason: the first ten, then one event of that reason for the rest",
			now:  failing(1000, limbov1alpha1.ReasonForbidden, 0),
			want: append(eventsOf(failing(maxResourceEvents, limbov1alpha1.ReasonForbidden, 0)),
				`Warning Forbidden 990 more resources went into Error: "cm-10", "cm-11", `),
			wantSummaryHas: []string{"status.resources"},
		},
		{
			name: "mixed reasons past the first ten: the summary is ResourceError and names each one's reason",
			now:  append(failing(maxResourceEvents, limbov1alpha1.ReasonForbidden, 0), append(failing(1, limbov1alpha1.ReasonInvalid, 10), failing(1, limbov1alpha1.ReasonApplyFailed, 11)...)...),
			want: append(eventsOf(failing(maxResourceEvents, limbov1alpha1.ReasonForbidden, 0)),
				`Warning ResourceError 2 more resources went into Error: "cm-10" (Invalid), "cm-11" (ApplyFailed)`),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			events := make(chan string, 2000)
			b := livingBundle()
			b.Status.Resources = tc.before
			p := newPass(&Reconciler{Recorder: &record.FakeRecorder{Events: events}}, b)
			p.resources = tc.now
			p.emitResourceEvents()
			p.emitAnnouncements()
			close(events)
			var got []string
			for e := range events {
				got = append(got, e)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("%d events, want %d: %q", len(got), len(tc.want), got)
			}
			for i, want := range tc.want {
				if !strings.HasPrefix(got[i], want) {
					t.Errorf("event %d = %q, want it to start with %q", i, got[i], want)
				}
			}
			for _, has := range tc.wantSummaryHas {
				if last := got[len(got)-1]; !strings.Contains(last, has) {
					t.Errorf("the summary %q does not name %q", last, has)
				}
			}
			if n := len(got); n > 0 && len(got[n-1]) > bundlespec.MessageBudget+200 {
				t.Errorf("the last event is %d bytes long: want it bounded", len(got[n-1]))
			}
		})
	}
}

// eventsOf is the event each of statuses is announced with.
func eventsOf(statuses []limbov1alpha1.ResourceStatus) []string {
	out := make([]string, len(statuses))
	for i, st := range statuses {
		out[i] = fmt.Sprintf("Warning %s resource %q: %s", st.Reason, st.Name, st.Message)
	}
	return out
}
