// Package tombstone is the Tombstone controller: it deletes the external item a
// Tombstone stands for when the soft-delete state machine says so (the deadline has
// passed), or at once when the Tombstone is deleted (`kubectl delete tombstone`),
// through the finalizer limbo.dev/hard-delete. Failures are retried with capped
// exponential backoff and recorded in status.attempts and status.lastError. The
// plugin's delete runs beside the worker (deletes.go), a few per backend at a
// time, so that a backend that hangs holds no worker.
package tombstone
