package bundle

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ensure waits for a kind's cache to sync only within syncTimeout of the start
// of its watch: later passes of a kind that never syncs (the controller may not
// list it) fail at once instead of each holding a worker for the timeout.
func TestEnsureWaitsOnlyWithinTheSyncTimeoutOfTheWatch(t *testing.T) {
	const timeout = 300 * time.Millisecond
	for _, tc := range []struct {
		name    string
		started time.Duration // before now
		synced  bool
		wantErr bool
		// wantWait: ensure polled the informer until the deadline (more than
		// the two checks of an immediate answer).
		wantWait bool
	}{
		{name: "synced", started: time.Hour, synced: true},
		{name: "not synced, watch just started: waits, then fails", started: 0, wantErr: true, wantWait: true},
		{name: "not synced past the timeout: fails at once", started: time.Minute, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := &atomic.Int32{}
			w := &watcher{
				cache:       countingCache{synced: tc.synced, calls: calls},
				syncTimeout: timeout,
				watched:     map[schema.GroupVersionKind]time.Time{limitRangeGVK: time.Now().Add(-tc.started)},
			}
			err := w.ensure(context.Background(), limitRangeGVK)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ensure: %v, want an error: %v", err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "has not synced within 300ms") {
				t.Errorf("error %q does not say the cache has not synced", err)
			}
			if waited := calls.Load() > 2; waited != tc.wantWait {
				t.Errorf("ensure checked the informer %d times: waited %v, want %v", calls.Load(), waited, tc.wantWait)
			}
		})
	}
}

var limitRangeGVK = schema.GroupVersionKind{Version: "v1", Kind: "LimitRange"}

// countingCache hands out an informer that has synced or not, and counts the
// checks. With a mapper, it indexes the kinds the mapper serves and refuses the
// others as a cache does (a NoMatch error).
type countingCache struct {
	cache.Cache
	synced bool
	calls  *atomic.Int32
	mapper meta.RESTMapper
}

func (c countingCache) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	if c.mapper == nil {
		return c.Cache.IndexField(ctx, obj, field, extract)
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	_, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	return err
}

func (c countingCache) GetInformer(context.Context, client.Object, ...cache.InformerGetOption) (cache.Informer, error) {
	return countingInformer{synced: c.synced, calls: c.calls}, nil
}

type countingInformer struct {
	cache.Informer
	synced bool
	calls  *atomic.Int32
}

func (i countingInformer) HasSynced() bool {
	i.calls.Add(1)
	return i.synced
}
