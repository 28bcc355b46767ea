// Package promreg registers Prometheus collectors so that building a
// component's metrics twice against one registry (a manager rebuilt in the same
// process, as tests and `limbo dev` do) reuses the collectors already there
// instead of panicking.
package promreg
