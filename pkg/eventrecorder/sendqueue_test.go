package eventrecorder

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// scriptedSink answers each write with the next error of its script (nil once
// the script is out) and records the calls.
type scriptedSink struct {
	mu      sync.Mutex
	answers []error
	calls   []string
}

func (s *scriptedSink) answer(call string, e *corev1.Event) (*corev1.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, call+" "+e.Message)
	if len(s.answers) == 0 {
		return e, nil
	}
	err := s.answers[0]
	s.answers = s.answers[1:]
	return nil, err
}

func (s *scriptedSink) Create(e *corev1.Event) (*corev1.Event, error) {
	if e.ResourceVersion != "" {
		return nil, errors.New("a create with a resourceVersion")
	}
	return s.answer("create", e)
}
func (s *scriptedSink) Update(e *corev1.Event) (*corev1.Event, error) { return s.answer("update", e) }
func (s *scriptedSink) Patch(e *corev1.Event, _ []byte) (*corev1.Event, error) {
	return s.answer("patch", e)
}

func TestSendQueueWrites(t *testing.T) {
	events := schema.GroupResource{Resource: "events"}
	unreachable := errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
	var twelveTimes []error
	for range maxTriesPerEvent {
		twelveTimes = append(twelveTimes, unreachable)
	}
	cases := []struct {
		name string
		// writes are "create m" or "patch m", m the event's message.
		writes  []string
		answers []error
		calls   []string
	}{
		{"a new event is created", []string{"create a"}, nil, []string{"create a"}},
		{"a merged event is patched", []string{"create a", "patch a"}, nil, []string{"create a", "patch a"}},
		{"an event gone since is created again", []string{"patch a"},
			[]error{apierrors.NewNotFound(events, "a")}, []string{"patch a", "create a"}},
		{"a refused event is given up, the next one sent", []string{"create a", "create b"},
			[]error{apierrors.NewForbidden(events, "a", errors.New("no"))}, []string{"create a", "create b"}},
		{"a new event whose name is taken is created under another", []string{"create a", "create b"},
			[]error{apierrors.NewAlreadyExists(events, "a")}, []string{"create a", "create a", "create b"}},
		{"an event already there at a later try is taken as made (the first try's answer lost)", []string{"create a", "create b"},
			[]error{unreachable, apierrors.NewAlreadyExists(events, "a")}, []string{"create a", "create a", "create b"}},
		{"an unreachable API server: the write is tried again, in order", []string{"create a", "create b"},
			[]error{unreachable, unreachable}, []string{"create a", "create a", "create a", "create b"}},
		{"tried 12 times at most", []string{"create a", "create b"}, twelveTimes,
			append(slices.Repeat([]string{"create a"}, maxTriesPerEvent), "create b")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sink := &scriptedSink{answers: tc.answers}
			q := newSendQueue(sink, logr.Discard(), func() { t.Error("an event was dropped") }, 10, time.Millisecond)
			for _, w := range tc.writes {
				verb, message, _ := strings.Cut(w, " ")
				e := &corev1.Event{Message: message}
				e.ResourceVersion = "7" // as the correlator keeps a sent event
				if verb == "patch" {
					if _, err := q.Patch(e, []byte(`{}`)); err != nil {
						t.Fatal(err)
					}
					continue
				}
				e.ResourceVersion = ""
				if _, err := q.Create(e); err != nil {
					t.Fatal(err)
				}
			}
			q.close(time.Minute)
			if !slices.Equal(sink.calls, tc.calls) {
				t.Errorf("calls %q, want %q", sink.calls, tc.calls)
			}
		})
	}
}

// Beyond its limit the queue drops an event and counts it; what it holds is
// still sent.
func TestSendQueueDropsBeyondItsLimit(t *testing.T) {
	sink := &gatedSink{open: make(chan struct{})}
	dropped := 0
	q := newSendQueue(sink, logr.Discard(), func() { dropped++ }, 3, time.Millisecond)
	if _, err := q.Create(&corev1.Event{Message: "0"}); err != nil {
		t.Fatal(err)
	}
	// The first write is out of the queue, waiting for the API server.
	poll(t, "the first write taken", func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return len(q.pending) == 0
	})
	for _, m := range []string{"1", "2", "3", "4"} {
		if _, err := q.Create(&corev1.Event{Message: m}); err != nil {
			t.Fatal(err)
		}
	}
	close(sink.open)
	q.close(time.Minute)
	if got, want := sink.sent(), []string{"0", "1", "2", "3"}; !slices.Equal(got, want) || dropped != 1 {
		t.Errorf("sent %q, dropped %d; want %q, 1 dropped", got, dropped, want)
	}
}

// A stop sends what is queued for its grace only: an API server that does not
// answer does not hold it.
func TestSendQueueStopsAfterItsGrace(t *testing.T) {
	sink := &gatedSink{open: make(chan struct{})}
	defer close(sink.open)
	q := newSendQueue(sink, logr.Discard(), func() {}, 10, time.Millisecond)
	for _, m := range []string{"a", "b"} {
		if _, err := q.Create(&corev1.Event{Message: m}); err != nil {
			t.Fatal(err)
		}
	}
	q.close(10 * time.Millisecond)
	if _, err := q.Create(&corev1.Event{Message: "after"}); err != nil {
		t.Fatal(err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.pending) != 0 {
		t.Errorf("%d writes still queued after the stop", len(q.pending))
	}
}

// An event refused because its namespace is being deleted is not retried; a
// Warning among them is logged — a deorbit's give-up or a refused cancel in a
// namespace on its way out may be the only word of it, its Bundle's status
// gone a moment later — and a Normal one is not (the audit lines log those
// that matter, and a namespace's deletion would flood the log).
func TestSendQueueLogsAWarningRefusedByATerminatingNamespace(t *testing.T) {
	terminating := &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
		Message: `events "b.17" is forbidden: unable to create new content in namespace ops because it is being terminated`,
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Message: "namespace ops is being terminated", Field: "metadata.namespace"}}},
	}}
	sink := &scriptedSink{answers: []error{terminating, terminating}}
	var lines []string
	log := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{})
	q := newSendQueue(sink, log, func() { t.Error("an event was dropped") }, 10, time.Millisecond)
	for _, e := range []*corev1.Event{
		{Type: corev1.EventTypeNormal, Reason: "Deleted", Message: "ConfigMap ops/a deleted"},
		{Type: corev1.EventTypeWarning, Reason: "DeorbitTimedOut", Message: "gave up: timeout 24h0m0s passed"},
	} {
		if _, err := q.Create(e); err != nil {
			t.Fatal(err)
		}
	}
	q.close(time.Minute)
	if len(sink.calls) != 2 {
		t.Errorf("calls %q, want each event sent once", sink.calls)
	}
	want := `"level"=0 "msg"="Warning event not recorded: its namespace is being deleted" "object"={} "reason"="DeorbitTimedOut" "message"="gave up: timeout 24h0m0s passed"`
	if len(lines) != 1 || !strings.HasPrefix(lines[0], `"level"=0 "msg"="Warning event not recorded`) || !strings.Contains(lines[0], `"reason"="DeorbitTimedOut" "message"="gave up: timeout 24h0m0s passed"`) {
		t.Errorf("log lines %q, want one: %s", lines, want)
	}
}

// apiServerSink keeps events by name as the API server does: a create of a
// name taken is AlreadyExists, a patch of a name unknown NotFound.
type apiServerSink struct {
	mu     sync.Mutex
	events map[string]*corev1.Event
	// patched are the names patched, in order.
	patched []string
}

func (s *apiServerSink) Create(e *corev1.Event) (*corev1.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.events[e.Name]; ok {
		return nil, apierrors.NewAlreadyExists(schema.GroupResource{Resource: "events"}, e.Name)
	}
	s.events[e.Name] = e.DeepCopy()
	return e, nil
}
func (s *apiServerSink) Update(e *corev1.Event) (*corev1.Event, error) { return s.Create(e) }
func (s *apiServerSink) Patch(e *corev1.Event, _ []byte) (*corev1.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.events[e.Name]; !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "events"}, e.Name)
	}
	s.patched = append(s.patched, e.Name)
	return e, nil
}

// Two events of one object made in the same nanosecond get the same name from
// client-go's recorder (the object's name and the instant): the second, taken
// as created when the API server answered AlreadyExists, was lost — a stamp of
// a Bundle's orphans missing from the audit trail (seen in CI: 30 orphans
// stamped four at a time, one DeletionScheduled event missing). It is created
// under another name, and the correlator's patches of it go there.
func TestSendQueueKeepsAnEventWhoseNameIsTaken(t *testing.T) {
	sink := &apiServerSink{events: map[string]*corev1.Event{}}
	q := newSendQueue(sink, logr.Discard(), func() { t.Error("an event was dropped") }, 10, time.Millisecond)
	event := func(message string) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "shop.17c8a1b2c3d4e5f6"}, Message: message}
	}
	for _, m := range []string{"ConfigMap ns/cm-01 is in limbo", "ConfigMap ns/cm-02 is in limbo"} {
		if _, err := q.Create(event(m)); err != nil {
			t.Fatal(err)
		}
	}
	repeat := event("ConfigMap ns/cm-02 is in limbo")
	repeat.ResourceVersion = "7"
	if _, err := q.Patch(repeat, []byte(`{"count":2}`)); err != nil {
		t.Fatal(err)
	}
	q.close(time.Minute)
	var messages []string
	for _, e := range sink.events {
		messages = append(messages, e.Message)
	}
	slices.Sort(messages)
	if want := []string{"ConfigMap ns/cm-01 is in limbo", "ConfigMap ns/cm-02 is in limbo"}; !slices.Equal(messages, want) {
		t.Errorf("events %q, want %q", messages, want)
	}
	if want := []string{"shop.17c8a1b2c3d4e5f6.1"}; !slices.Equal(sink.patched, want) {
		t.Errorf("patched %q, want %q: the repeat of the renamed event", sink.patched, want)
	}
}
