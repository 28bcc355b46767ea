// Package remotecluster lets a plugin act on another cluster: the one whose
// kubeconfig is in a Secret of the Bundle's namespace (`kubeConfigSecretRef:
// {name, key}`, key default "value"), as a workload cluster's is in its seed.
//
// A Cache builds a controller-runtime client, a discovery client and a lazy
// RESTMapper from that kubeconfig, once per Secret version (its UID and
// resourceVersion): a rotated kubeconfig is picked up at the next call, and an
// unchanged one costs a Secret read, not a new connection. Every request carries a
// timeout, so an unreachable cluster makes a call fail rather than hang.
//
// A missing Secret, a missing key or a kubeconfig that does not parse is an *Error
// that names the Secret and the problem; a plugin returns it from Plan, which makes
// the resource Error: never a crash, never a deletion. A cluster that does not
// answer is not such an error (the kubeconfig may be fine); IsUnreachable tells
// those errors apart, connection errors included. A request that timed out does
// not mean the cluster answers nothing: Clients.LastAnswer says when it last
// answered.
package remotecluster
