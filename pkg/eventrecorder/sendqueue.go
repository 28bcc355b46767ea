package eventrecorder

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
)

// maxQueuedEvents is how many events the send queue holds before it drops the
// next: a mass deletion of that many objects keeps all its events while they
// are sent one by one (about 10 MiB of events at most).
const maxQueuedEvents = 10000

// retryPause and maxTriesPerEvent are client-go's: a write the API server did
// not answer is tried again after 10 s (the first pause shortened at random),
// 12 times in all.
const (
	retryPause       = 10 * time.Second
	maxTriesPerEvent = 12
)

// sendQueue is the sink client-go's broadcaster records to: it queues each write
// and answers at once, and one goroutine sends the writes to the API server in
// order. client-go's broadcaster sends one event at a time from a channel of
// 1,000 and drops what does not fit, so a burst of stamps or deletions faster
// than one client sends events lost the rest of its audit trail without a word;
// here the broadcaster's channels empty as fast as they fill, and only a burst
// beyond maxQueuedEvents loses events, each counted and logged.
//
// A write is sent as client-go sends it (record.recordEvent): the correlator's
// patch of an event sent before, or the whole event when there is no patch or
// the event is gone; retried after a pause when the API server cannot be
// reached, given up when it refuses the event.
type sendQueue struct {
	sink  record.EventSink
	log   logr.Logger
	limit int
	// pause is the wait before a write is tried again; tries the attempts at
	// most.
	pause time.Duration
	tries int
	// dropped counts an event the queue had no room for.
	dropped func()

	mu       sync.Mutex
	received int
	pending  []write
	closed   bool
	wake     chan struct{}
	// renamed maps the name the recorder gave an event that another event of
	// its object had taken to the name it was created under, for the
	// correlator's patches of it. Only the sending goroutine uses it.
	renamed map[types.NamespacedName]string
	// ctx ends a pause between tries once the queue is closed and its grace
	// has passed; done closes when the sending goroutine returns.
	ctx  context.Context
	stop context.CancelFunc
	done chan struct{}
}

// write is one write of an event: its patch when the correlator merged it into
// an event sent before.
type write struct {
	event *corev1.Event
	patch []byte
}

// newSendQueue starts a queue of at most limit writes in front of sink, which
// pauses for pause before a write is tried again.
func newSendQueue(sink record.EventSink, log logr.Logger, dropped func(), limit int, pause time.Duration) *sendQueue {
	ctx, stop := context.WithCancel(context.Background())
	q := &sendQueue{sink: sink, log: log, limit: limit, pause: pause, tries: maxTriesPerEvent, dropped: dropped,
		wake: make(chan struct{}, 1), ctx: ctx, stop: stop, done: make(chan struct{}), renamed: map[types.NamespacedName]string{}}
	go q.run()
	return q
}

var _ record.EventSink = (*sendQueue)(nil)

// Create queues event and answers it as created: the correlator keeps the
// answer to patch the event when it happens again, by the name the recorder
// gave it.
func (q *sendQueue) Create(event *corev1.Event) (*corev1.Event, error) {
	q.add(write{event: event.DeepCopy()})
	return event, nil
}

// Update is never called by client-go's broadcaster; it is sent as a create.
func (q *sendQueue) Update(event *corev1.Event) (*corev1.Event, error) {
	return q.Create(event)
}

// Patch queues the correlator's patch of an event sent before.
func (q *sendQueue) Patch(event *corev1.Event, patch []byte) (*corev1.Event, error) {
	q.add(write{event: event.DeepCopy(), patch: patch})
	return event, nil
}

func (q *sendQueue) add(w write) {
	q.mu.Lock()
	q.received++
	closed := q.closed
	full := closed || len(q.pending) >= q.limit
	if !full {
		q.pending = append(q.pending, w)
	}
	q.mu.Unlock()
	if full {
		q.dropped()
		why := "too many events waiting to be sent"
		if closed {
			why = "the recorder is stopped"
		}
		q.log.Error(nil, "Event dropped: "+why, "limit", q.limit, "object", w.event.InvolvedObject, "reason", w.event.Reason, "message", w.event.Message)
		return
	}
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// writes is how many writes the queue was given.
func (q *sendQueue) writes() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.received
}

// next waits for the oldest write; false once the queue is closed and empty.
func (q *sendQueue) next() (write, bool) {
	for {
		q.mu.Lock()
		if len(q.pending) > 0 {
			w := q.pending[0]
			q.pending[0] = write{}
			q.pending = q.pending[1:]
			if len(q.pending) == 0 {
				q.pending = nil // let go of the burst's backing array
			}
			q.mu.Unlock()
			return w, true
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return write{}, false
		}
		<-q.wake
	}
}

func (q *sendQueue) run() {
	defer close(q.done)
	for {
		w, ok := q.next()
		if !ok {
			return
		}
		q.send(w)
	}
}

// send writes w, trying again after a pause while the API server cannot be
// reached, at most q.tries times.
func (q *sendQueue) send(w write) {
	for try := 1; ; try++ {
		err := q.write(w, try == 1)
		if err == nil || !retriable(err) {
			switch {
			case err == nil || apierrors.IsAlreadyExists(err):
				// AlreadyExists: a later try of a create that landed, its
				// answer lost (write renames a new event whose name another
				// took).
			case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
				// Expected while a namespace goes, and not an error of limbo's;
				// but a Warning there (a deorbit that gave up, a cancel refused,
				// a delete failed) may be its only word, the Bundle and its
				// status gone a moment later: the log keeps it.
				if w.event.Type == corev1.EventTypeWarning {
					q.log.Info("Warning event not recorded: its namespace is being deleted", "object", w.event.InvolvedObject, "reason", w.event.Reason, "message", w.event.Message)
				}
			default:
				q.log.Error(err, "Event refused (will not retry)", "object", w.event.InvolvedObject, "reason", w.event.Reason, "message", w.event.Message)
			}
			return
		}
		if try == q.tries {
			q.log.Error(err, "Event not sent (retry limit reached)", "object", w.event.InvolvedObject, "reason", w.event.Reason, "message", w.event.Message)
			return
		}
		pause := q.pause
		if try == 1 {
			// Not all in step with the other clients after an API server outage.
			pause = time.Duration(rand.Float64() * float64(pause))
		}
		select {
		case <-q.ctx.Done():
			return
		case <-time.After(pause):
		}
	}
}

func (q *sendQueue) write(w write, first bool) error {
	given := types.NamespacedName{Namespace: w.event.Namespace, Name: w.event.Name}
	if name, ok := q.renamed[given]; ok {
		w.event.Name = name // w.event is the queue's own copy
	}
	if w.patch != nil {
		_, err := q.sink.Patch(w.event, w.patch)
		if !apierrors.IsNotFound(err) {
			return err
		}
		// Gone since (events expire after an hour): sent whole again.
	}
	w.event.ResourceVersion = ""
	_, err := q.sink.Create(w.event)
	if !apierrors.IsAlreadyExists(err) || !first || w.patch != nil {
		// Already there at a later try: the try before made it, its answer
		// lost.
		return err
	}
	// A new event whose name is taken: the recorder names an event after its
	// object and the instant in nanoseconds, and two events of one object
	// made in the same nanosecond (concurrent stamps of one Bundle's orphans)
	// share a name. Taken for success as client-go does, the second was lost
	// without a word, a stamp missing from the audit trail.
	for n := 1; apierrors.IsAlreadyExists(err) && n <= maxRenames; n++ {
		w.event.Name = fmt.Sprintf("%s.%d", given.Name, n)
		_, err = q.sink.Create(w.event)
	}
	if err == nil {
		if len(q.renamed) >= maxRenamed {
			clear(q.renamed) // rare; a patch of an older one then makes a new event
		}
		q.renamed[given] = w.event.Name
	}
	return err
}

// maxRenames bounds the other names tried for an event whose name is taken;
// maxRenamed how many renamed events the queue remembers for their patches.
const (
	maxRenames = 5
	maxRenamed = 4096
)

// retriable is client-go's rule: an answer of the API server, or a request
// that could not be built, will be the same next time.
func retriable(err error) bool {
	var status apierrors.APIStatus
	var construction *restclient.RequestConstructionError
	return !errors.As(err, &status) && !errors.As(err, &construction)
}

// close sends what is queued for at most grace, then drops the rest: the last
// stamps and deletions before a controller stops are recorded, an unreachable
// API server does not hold the stop for long. A write in flight at the end of
// the grace finishes on its own.
func (q *sendQueue) close(grace time.Duration) {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-q.done:
		return
	case <-timer.C:
	}
	q.mu.Lock()
	left := len(q.pending)
	q.pending = nil
	q.mu.Unlock()
	q.stop()
	q.log.Error(nil, "Events not sent before the stop", "events", left)
}
