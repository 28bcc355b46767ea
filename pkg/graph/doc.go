// Package graph orders the resources of a Bundle by their dependencies.
//
// A Graph has a vertex per resource and an edge from each resource to every
// resource it references: AddEdge(from, to) reads "from depends on to".
// TopologicalSort gives the order in which resources are created (dependencies
// before dependents) and ReverseWaves the order in which they are torn down
// (dependents before dependencies, in groups that can be deleted together).
//
// Both are deterministic: ties are broken by the order in which vertices and
// edges were added, never by map iteration, so the same Bundle always yields the
// same order and its status does not churn between reconciles. The sort is the
// depth-first search of atlassian/smith: vertices are visited in insertion
// order, and each vertex is emitted after its dependencies. For example, with
//
//	a -> c, b, c -> b, d -> e, e   (added in the order a, b, c, d, e)
//
// TopologicalSort returns b, c, a, e, d.
//
// A Graph that cannot be ordered yields a *MissingVertexError, when a resource
// references a resource that was never added, or a *CycleError, when resources
// depend on each other. Both carry the names a caller needs to blame the
// offending resource.
//
// A Graph is not safe for concurrent mutation; it is meant to be built from a
// Bundle, queried and thrown away within one reconcile.
package graph
