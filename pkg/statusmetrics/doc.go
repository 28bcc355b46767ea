// Package statusmetrics exports, per Bundle and per Tombstone, what their status
// says: the pending deletions of each Bundle and its next deadline, and the
// failed external delete attempts of each Tombstone. The numbers are read from
// the controller's informer cache at scrape time (the kube-state-metrics way), so
// they are exactly what `kubectl get bundles,tombstones` shows, need no
// bookkeeping in the reconcilers, and disappear with their object.
//
// Every replica serves them (each has the cache, leader or not); dashboards take
// the max per object. The Grafana dashboard in build/deploy/monitoring reads them.
package statusmetrics
