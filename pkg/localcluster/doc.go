// Package localcluster runs a real, minimal Kubernetes control plane on loopback:
// etcd, kube-apiserver and kube-controller-manager, built from the pinned modules in
// build/cluster (see `make cluster-bins`). The garbage collector and the namespace
// controller run, so owner-reference cascades and namespace deletion really happen.
//
// It backs `limbo dev` and the integration tests in it/. Every process it starts dies
// with its parent (Pdeathsig), so no etcd or API server outlives a finished test, a
// Ctrl-C or a crashed test binary.
package localcluster
