package bench

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/controller"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// tracker watches, for the benchmark, the Bundles (when each becomes Ready at a
// generation) and the ConfigMaps in limbo (their deadlines and when they go).
// Times are taken when the watch event arrives.
type tracker struct {
	mu sync.Mutex
	// ready is, by namespace/name, the latest generation a Bundle was seen Ready
	// at, and when.
	ready map[string]mark
	// deadline and deleted are by namespace/name of ConfigMaps in limbo.
	deadline map[string]time.Time
	deleted  map[string]time.Time
	notify   notifier
}

type mark struct {
	generation int64
	at         time.Time
}

// startTracker starts the informers in namespaces and returns once they are synced.
func startTracker(ctx context.Context, cfg *rest.Config, namespaces []string) (*tracker, error) {
	pending := labels.SelectorFromSet(labels.Set{limbov1alpha1.LabelPendingDeletion: "true"})
	opts := cache.Options{
		Scheme:            controller.NewScheme(),
		DefaultNamespaces: map[string]cache.Config{},
		ByObject:          map[client.Object]cache.ByObject{&corev1.ConfigMap{}: {Label: pending}},
	}
	for _, ns := range namespaces {
		opts.DefaultNamespaces[ns] = cache.Config{}
	}
	c, err := cache.New(cfg, opts)
	if err != nil {
		return nil, err
	}
	t := &tracker{ready: map[string]mark{}, deadline: map[string]time.Time{}, deleted: map[string]time.Time{}, notify: newNotifier()}
	if err := startWatches(ctx, c, "the benchmark's informers",
		watch{&limbov1alpha1.Bundle{}, toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { t.observeBundle(obj) },
			UpdateFunc: func(_, obj any) { t.observeBundle(obj) },
		}},
		watch{&corev1.ConfigMap{}, toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { t.observeInLimbo(obj) },
			UpdateFunc: func(_, obj any) { t.observeInLimbo(obj) },
			DeleteFunc: t.observeDeleted,
		}},
	); err != nil {
		return nil, err
	}
	return t, nil
}

// watch is an informer's object and its event handler.
type watch struct {
	obj     client.Object
	handler toolscache.ResourceEventHandler
}

// startWatches adds the watches' handlers to c's informers, starts c and waits
// until it is synced; what names the informers in the error.
func startWatches(ctx context.Context, c cache.Cache, what string, watches ...watch) error {
	for _, w := range watches {
		inf, err := c.GetInformer(ctx, w.obj)
		if err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(w.handler); err != nil {
			return err
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return fmt.Errorf("%s did not sync", what)
	}
	return nil
}

// notifier wakes one waiter without blocking the informer that calls poke.
type notifier chan struct{}

func newNotifier() notifier { return make(notifier, 1) }

func (n notifier) poke() {
	select {
	case n <- struct{}{}:
	default:
	}
}

func (t *tracker) observeBundle(obj any) {
	now := time.Now()
	b, ok := obj.(*limbov1alpha1.Bundle)
	if !ok || b.Status.ObservedGeneration != b.Generation {
		return
	}
	cond := meta.FindStatusCondition(b.Status.Conditions, "Ready")
	if cond == nil || cond.Status != "True" || cond.ObservedGeneration != b.Generation {
		return
	}
	key := b.Namespace + "/" + b.Name
	t.mu.Lock()
	defer t.mu.Unlock()
	if cur, seen := t.ready[key]; !seen || cur.generation < b.Generation {
		t.ready[key] = mark{generation: b.Generation, at: now}
		t.notify.poke()
	}
}

// observeInLimbo records the deadline of a ConfigMap in limbo: its stamp plus its
// delay, read from the object before it goes.
func (t *tracker) observeInLimbo(obj any) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return
	}
	deadline, ok := deadlineOf(cm)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.deadline[cm.Namespace+"/"+cm.Name] = deadline
}

func (t *tracker) observeDeleted(obj any) {
	now := time.Now()
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return
	}
	key := cm.Namespace + "/" + cm.Name
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, known := t.deadline[key]; !known {
		if deadline, ok := deadlineOf(cm); ok {
			t.deadline[key] = deadline
		}
	}
	t.deleted[key] = now
	t.notify.poke()
}

func deadlineOf(cm *corev1.ConfigMap) (time.Time, bool) {
	stamp, err := time.Parse(time.RFC3339, cm.Annotations[limbov1alpha1.AnnotationDeletionTimestamp])
	if err != nil {
		return time.Time{}, false
	}
	delay, err := softdelete.ParseDelay(cm.Annotations[limbov1alpha1.AnnotationDeletionDelay])
	if err != nil {
		return time.Time{}, false
	}
	return stamp.Add(delay), true
}

// waitReady waits until every Bundle of want (namespace/name → generation) has
// been seen Ready at that generation or a later one, and returns when the last
// of them became Ready. check is called about every second (to fail early, for
// example when the controller died); progress is reported every 15 seconds.
func (t *tracker) waitReady(ctx context.Context, want map[string]int64, what string, progress io.Writer, check func() error) (time.Time, error) {
	return waitUntil(ctx, what, "Bundles Ready", t.notify, progress, check, func() (int, int, time.Time) {
		t.mu.Lock()
		defer t.mu.Unlock()
		var last time.Time
		done := 0
		for key, gen := range want {
			if m, ok := t.ready[key]; ok && m.generation >= gen {
				done++
				if m.at.After(last) {
					last = m.at
				}
			}
		}
		return done, len(want), last
	})
}

// waitDeleted waits until every ConfigMap of keys (namespace/name) is gone and
// returns, by key, its deadline and when it went (a zero deadline: its stamp was
// never seen).
func (t *tracker) waitDeleted(ctx context.Context, keys []string, progress io.Writer, check func() error) (map[string][2]time.Time, error) {
	if _, err := waitUntil(ctx, "deletion", "objects gone", t.notify, progress, check, func() (int, int, time.Time) {
		t.mu.Lock()
		defer t.mu.Unlock()
		done := 0
		for _, k := range keys {
			if _, ok := t.deleted[k]; ok {
				done++
			}
		}
		return done, len(keys), time.Time{}
	}); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string][2]time.Time{}
	for _, k := range keys {
		out[k] = [2]time.Time{t.deadline[k], t.deleted[k]}
	}
	return out, nil
}

// waitUntil waits until count reports every item done (count returns done,
// total and the time the last one got done) and returns that time. It counts
// again on every notify, and about every second, when it also calls check (to
// fail early, for example when a controller died); progress is reported every
// 15 seconds as "<what>: <done>/<total> <items> after <elapsed>".
func waitUntil(ctx context.Context, what, items string, notify <-chan struct{}, progress io.Writer, check func() error, count func() (done, total int, last time.Time)) (time.Time, error) {
	started := time.Now()
	lastReport := started
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	for {
		done, total, last := count()
		if done == total {
			return last, nil
		}
		if time.Since(lastReport) >= 15*time.Second {
			lastReport = time.Now()
			fmt.Fprintf(progress, "  %s: %d/%d %s after %s\n", what, done, total, items, time.Since(started).Round(time.Second))
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("%s: %d/%d %s: %w", what, done, total, items, ctx.Err())
		case <-notify:
		case <-ticker.C:
			if err := check(); err != nil {
				return time.Time{}, err
			}
		}
	}
}
