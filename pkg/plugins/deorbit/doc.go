// Package deorbit is the deorbit plugin (seed: SAP kubernikus's deorbiter): when
// its Bundle is torn down, before any other content of the Bundle goes, it
// removes from a target cluster (a workload cluster reached through a kubeconfig
// Secret, or this one) what would otherwise outlive it in the cloud: volume
// snapshots, the volumes of its CSI drivers and its load balancers.
//
//   - While the Bundle lives it deletes nothing: the resource's message is an
//     armed report of what it would remove ("armed: 3 PVCs, 1 LoadBalancer
//     Service, 2 VolumeSnapshots"), read from the target.
//   - At teardown (plugin.TearDowner) its items in the target — VolumeSnapshots
//     (skipped when the CRD is absent; one that serves no v1 fails the read), Bound PVCs whose PV a listed CSI driver
//     provisioned, Services of type LoadBalancer — go through limbo's engine:
//     stamped with the resource's deletionDelay, deleted at the deadline with UID
//     and resourceVersion preconditions, NotFound being success.
//   - It then waits for the PVs of those claims to be gone (Failed PVs ignored)
//     and for the Services to be gone; a Service that no load-balancer finalizer
//     guards counts as gone loadBalancerWait after its delete.
//   - Past timeout, or with another cluster as the target unreachable for
//     apiUnavailableTimeout (connection errors and timeouts count, on passes
//     during which the target answered nothing: a slow target is retried until
//     timeout; this cluster, whose API server the teardown's state is written
//     to, is never unreachable), it gives up: a Warning event DeorbitTimedOut
//     lists the debris left behind, and the teardown goes on.
//
// Its progress is kept on the Bundle (the teardown state), so a restarted
// controller resumes without repeating the steps that finished.
package deorbit
