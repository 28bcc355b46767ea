package it

import (
	"context"
	"fmt"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/controller"
)

// tombstoneLog records every Tombstone a namespace holds from the moment it is
// started, as first seen on a watch: a Tombstone with a short delay can be made,
// executed and removed between two polls of a List (TestNamespaceGCPeriodicGC
// once waited 60 s for a Tombstone that had come and gone in one second).
type tombstoneLog struct {
	mu   sync.Mutex
	seen []limbov1alpha1.Tombstone
}

// watchTombstones starts a log of ns's Tombstones, stopped when t ends. Start it
// before anything can make one.
func watchTombstones(t testing.TB, ns string) *tombstoneLog {
	t.Helper()
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: controller.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var list limbov1alpha1.TombstoneList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatalf("list Tombstones: %v", err)
	}
	l := &tombstoneLog{seen: list.Items}
	go l.follow(ctx, c, ns, list.ResourceVersion)
	return l
}

// follow records the Tombstones the watch shows, from resourceVersion on, and
// watches again from the last version seen when the API server ends a watch.
func (l *tombstoneLog) follow(ctx context.Context, c client.WithWatch, ns, resourceVersion string) {
	for ctx.Err() == nil {
		w, err := c.Watch(ctx, &limbov1alpha1.TombstoneList{}, client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: resourceVersion}})
		if err != nil {
			return // the test has ended (or the cluster is gone): its waits report it
		}
		for ev := range w.ResultChan() {
			ts, ok := ev.Object.(*limbov1alpha1.Tombstone)
			if !ok {
				continue
			}
			resourceVersion = ts.ResourceVersion
			if ev.Type == watch.Added {
				l.mu.Lock()
				l.seen = append(l.seen, *ts)
				l.mu.Unlock()
			}
		}
		w.Stop()
	}
}

// wait returns the first Tombstone seen whose item matches, waiting for one;
// explain says, when none comes, what the test's world looks like.
func (l *tombstoneLog) wait(t testing.TB, what string, matches func(limbov1alpha1.ExternalItem) bool, explain func() string) limbov1alpha1.Tombstone {
	t.Helper()
	var found limbov1alpha1.Tombstone
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, ts := range l.seen {
			if matches(ts.Spec.Item) {
				found = ts
				return nil
			}
		}
		return lazyError(func() string { return fmt.Sprintf("no Tombstone was made for %s; %s", what, explain()) })
	})
	return found
}

// lazyError is an error whose message is built only when it is reported: a
// diagnosis that reads the cluster must not slow every poll down.
type lazyError func() string

func (e lazyError) Error() string { return e() }
