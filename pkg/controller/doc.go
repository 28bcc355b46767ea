// Package controller assembles limbo's controllers into a controller-runtime
// manager: the Bundle reconciler, the reaper and the Tombstone controller, with
// leader election, metrics, health probes and ordered start and stop.
//
// `limbo controller` and `limbo dev` both run the manager built here.
package controller
