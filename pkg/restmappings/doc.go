// Package restmappings remembers the REST mappings a RESTMapper found.
//
// controller-runtime's dynamic RESTMapper answers each RESTMapping call by
// asking the mapper of every API group version it knows, and limbo asks on every
// request it sends (the client maps each object's kind to its resource) and for
// every resource of every pass (bundlespec.Parse): a tenth of the controller's CPU
// in the benchmark's converge, and more in a cluster that serves more groups.
// A kind's mapping does not change while the API server serves it, so the first
// answer is kept. Errors are not: a kind not served yet (a CRD being created) is
// asked for again, and the dynamic mapper reloads its discovery as before.
//
// A kind that stops being served (its CRD deleted, a version dropped) is the
// exception, and neither the remembered answers nor the dynamic mapper notice
// it: the dynamic mapper only ever adds to what it discovered. Reset forgets
// both — it starts a new delegate, which discovers again on first use — for the
// owner of the mapper to call when it sees a kind go.
package restmappings
