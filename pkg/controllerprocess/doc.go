// Package controllerprocess runs `limbo controller` as a child process: the
// benchmark (whose figures must describe the controller alone) and the
// integration tests that need separate processes (leader election, shards, the
// log as an audit trail) use it. The benchmark also runs a peer controller (kro)
// through it: any controller-runtime manager that takes the same address and
// kubeconfig flags. It also parses the process's /metrics.
package controllerprocess
