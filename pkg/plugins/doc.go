// Package plugins registers limbo's compiled-in plugins, one package each:
// configmap (the generator example), deorbit, namespace-gc, node-removal,
// route-gc.
package plugins
