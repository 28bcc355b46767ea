package eventrecorder

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
)

// gatedSink is an API server that answers no write until the test opens it, and
// keeps every event it is sent.
type gatedSink struct {
	open chan struct{}
	mu   sync.Mutex
	got  []string
}

func (s *gatedSink) keep(e *corev1.Event) (*corev1.Event, error) {
	<-s.open
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, e.Message)
	return e, nil
}

func (s *gatedSink) Create(e *corev1.Event) (*corev1.Event, error) { return s.keep(e) }
func (s *gatedSink) Update(e *corev1.Event) (*corev1.Event, error) { return s.keep(e) }
func (s *gatedSink) Patch(e *corev1.Event, _ []byte) (*corev1.Event, error) {
	return s.keep(e)
}

func (s *gatedSink) sent() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}

// poll calls cond until it is true, failing t after a while.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// A mass deletion records its events faster than one client sends them: every
// one of them reaches the API server, in order. client-go's broadcaster alone
// holds about 2,000 waiting and drops the rest without a word. The burst is
// recorded a chunk at a time, as a pass records them between its writes: each
// chunk reaches the send queue before the next (a tight loop of thousands of
// events outruns client-go's correlator, which no pass does).
func TestEveryEventOfABurstIsSent(t *testing.T) {
	const burst, chunk = 5000, 250
	sink := &gatedSink{open: make(chan struct{})}
	recorder, queue, stop := start(sink, scheme.Scheme, "limbo", logr.Discard(), func() { t.Error("an event was dropped") })
	defer stop()
	bundle := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", UID: "uid-b"}}
	for i := range burst {
		recorder.Eventf(bundle, corev1.EventTypeNormal, "Deleted", "ConfigMap ns/cm-%04d deleted", i)
		if (i+1)%chunk == 0 {
			poll(t, fmt.Sprintf("%d events queued", i+1), func() bool { return queue.writes() == i+1 })
		}
	}
	close(sink.open)
	poll(t, fmt.Sprintf("%d events sent", burst), func() bool { return len(sink.sent()) >= burst })
	got := sink.sent()
	if len(got) != burst {
		t.Fatalf("%d events sent, want %d", len(got), burst)
	}
	for i, m := range got {
		if want := fmt.Sprintf("ConfigMap ns/cm-%04d deleted", i); m != want {
			t.Fatalf("event %d is %q, want %q", i, m, want)
		}
	}
}
