package statusmetrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/promreg"
)

// listTimeout bounds a scrape's reads: before the cache has synced, a List waits.
const listTimeout = 5 * time.Second

// Collector is a prometheus.Collector of Bundles' and Tombstones' status.
type Collector struct {
	mu     sync.RWMutex
	reader client.Reader

	pending, nextDeletion, attempts, deleteAfter *prometheus.Desc
}

// Register registers a Collector with reg and returns the one reg serves: the
// collector already there when a manager is rebuilt in the same process. It
// exports nothing until SetReader.
func Register(reg prometheus.Registerer) *Collector {
	return promreg.Register(reg, New())
}

// New returns a Collector that exports nothing until SetReader.
func New() *Collector {
	bundle := []string{"namespace", "bundle"}
	tombstone := []string{"namespace", "tombstone", "bundle", "plugin", "kind"}
	return &Collector{
		pending: prometheus.NewDesc("limbo_bundle_pending_deletions",
			"Objects and external items a Bundle has in limbo (status.pendingDeletionCount).", bundle, nil),
		nextDeletion: prometheus.NewDesc("limbo_bundle_next_deletion_timestamp_seconds",
			"When a Bundle's soonest pending deletion is due, as a Unix time (status.nextDeletion).", bundle, nil),
		attempts: prometheus.NewDesc("limbo_tombstone_attempts",
			"External deletes started for a Tombstone (status.attempts).", tombstone, nil),
		deleteAfter: prometheus.NewDesc("limbo_tombstone_delete_after_timestamp_seconds",
			"The deadline of a Tombstone's countdown, as a Unix time (status.deleteAfter).", tombstone, nil),
	}
}

// SetReader makes the collector read Bundles and Tombstones from r, normally
// the manager's cache. A controller restarted in-process replaces the reader.
func (c *Collector) SetReader(r client.Reader) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reader = r
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.pending, c.nextDeletion, c.attempts, c.deleteAfter} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. A kind that cannot be listed is left
// out of this scrape rather than failing the whole /metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.RLock()
	r := c.reader
	c.mu.RUnlock()
	if r == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
	defer cancel()

	// A scrape only reads the cached objects: copying every Bundle (its templates
	// and status) on each scrape was megabytes of garbage per scrape at a thousand
	// Bundles.
	var bundles limbov1alpha1.BundleList
	if err := r.List(ctx, &bundles, client.UnsafeDisableDeepCopy); err == nil {
		for _, b := range bundles.Items {
			ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(b.Status.PendingDeletionCount), b.Namespace, b.Name)
			if b.Status.NextDeletion != nil {
				ch <- prometheus.MustNewConstMetric(c.nextDeletion, prometheus.GaugeValue, unixSeconds(b.Status.NextDeletion.Time), b.Namespace, b.Name)
			}
		}
	}
	var tombstones limbov1alpha1.TombstoneList
	if err := r.List(ctx, &tombstones, client.UnsafeDisableDeepCopy); err == nil {
		for _, t := range tombstones.Items {
			labels := []string{t.Namespace, t.Name, t.Labels[limbov1alpha1.LabelBundle], t.Spec.Plugin, t.Spec.Item.Kind}
			ch <- prometheus.MustNewConstMetric(c.attempts, prometheus.GaugeValue, float64(t.Status.Attempts), labels...)
			if t.Status.DeleteAfter != nil {
				ch <- prometheus.MustNewConstMetric(c.deleteAfter, prometheus.GaugeValue, unixSeconds(t.Status.DeleteAfter.Time), labels...)
			}
		}
	}
}

// unixSeconds is t in seconds since the epoch. Not t.UnixNano: it overflows past
// 2262, where a stamp written far ahead (kept until 9999) puts a deadline.
func unixSeconds(t time.Time) float64 { return float64(t.Unix()) + float64(t.Nanosecond())/1e9 }
