package graph

import (
	"fmt"
	"strings"

	"github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// MissingVertexError is returned when a vertex depends on a vertex that was never
// added: in a Bundle, a resource that references a resource it does not declare.
type MissingVertexError struct {
	// From is the vertex whose edge is dangling: the resource to blame.
	From string
	// To is the vertex that is missing.
	To string
}

func (e *MissingVertexError) Error() string {
	return fmt.Sprintf("resource %q references missing resource %q", e.From, e.To)
}

// CycleError is returned when vertices depend on each other, directly or not.
type CycleError struct {
	// Path is the cycle as the depth-first search found it. It starts and ends at
	// the same vertex, so a vertex that depends on itself gives [a a]; Path[0] is
	// the resource to blame.
	Path []string
}

func (e *CycleError) Error() string {
	return "dependency cycle: " + strings.Join(e.Path, " -> ")
}

// Graph is a directed graph of dependencies between named vertices that
// remembers the order in which vertices and edges were added. The zero value is
// not usable; create one with New.
type Graph struct {
	// vertices holds the vertices in insertion order and added holds the
	// same vertices as a set.
	vertices []string
	added    map[string]bool
	// dependencies and dependents hold the edges of each vertex in both
	// directions, each in insertion order and without duplicates.
	dependencies map[string][]string
	dependents   map[string][]string
	// edges holds every distinct edge in insertion order, so that a dangling edge
	// is reported deterministically.
	edges []edge
}

type edge struct{ from, to string }

// New returns an empty Graph.
func New() *Graph {
	return &Graph{
		added:        map[string]bool{},
		dependencies: map[string][]string{},
		dependents:   map[string][]string{},
	}
}

// ForResources returns the Graph of a Bundle's resources: a vertex for each
// resource, in declaration order, and an edge for each of their references.
// Every vertex is added before any edge, so a reference to a resource declared
// later is not mistaken for a missing one.
func ForResources(resources []v1alpha1.Resource) *Graph {
	g := New()
	for _, resource := range resources {
		g.AddVertex(resource.Name)
	}
	for _, resource := range resources {
		for _, reference := range resource.References {
			g.AddEdge(resource.Name, reference.Resource)
		}
	}
	return g
}

// AddVertex adds a vertex. Adding a vertex again does nothing: it keeps its first
// position.
func (g *Graph) AddVertex(name string) {
	if g.added[name] {
		return
	}
	g.added[name] = true
	g.vertices = append(g.vertices, name)
}

// AddEdge records that from depends on to. Adding an edge again does nothing, so
// a resource may reference another one several times, for several values.
//
// If from has not been added yet it is added, since the vertex that declares a
// dependency exists by definition. to is not: an edge to a vertex that is never
// added makes TopologicalSort and ReverseWaves return a *MissingVertexError.
func (g *Graph) AddEdge(from, to string) {
	g.AddVertex(from)
	for _, dependency := range g.dependencies[from] {
		if dependency == to {
			return
		}
	}
	g.dependencies[from] = append(g.dependencies[from], to)
	g.dependents[to] = append(g.dependents[to], from)
	g.edges = append(g.edges, edge{from: from, to: to})
}

// Dependencies returns the vertices name directly depends on, in the order the
// edges were added.
func (g *Graph) Dependencies(name string) []string {
	return clone(g.dependencies[name])
}

// The states of a vertex in a depth-first search (TopologicalSort, Sortable).
const (
	_ = iota // unvisited: the zero value
	// inProgress marks the vertices on the current path of the search;
	// reaching one again closes a cycle.
	inProgress
	done
)

// TopologicalSort returns every vertex after the vertices it depends on. Among
// vertices that could come in either order, the one added first comes first;
// see the package documentation.
func (g *Graph) TopologicalSort() ([]string, error) {
	if err := g.checkEdges(); err != nil {
		return nil, err
	}

	state := make(map[string]int, len(g.vertices))
	sorted := make([]string, 0, len(g.vertices))
	var path []string

	var visit func(vertex string) error
	visit = func(vertex string) error {
		switch state[vertex] {
		case done:
			return nil
		case inProgress:
			start := 0
			for path[start] != vertex {
				start++
			}
			cycle := append(clone(path[start:]), vertex)
			return &CycleError{Path: cycle}
		}
		state[vertex] = inProgress
		path = append(path, vertex)
		for _, dependency := range g.dependencies[vertex] {
			if err := visit(dependency); err != nil {
				return err
			}
		}
		path = path[:len(path)-1]
		state[vertex] = done
		sorted = append(sorted, vertex)
		return nil
	}

	for _, vertex := range g.vertices {
		if err := visit(vertex); err != nil {
			return nil, err
		}
	}
	return sorted, nil
}

// ReverseWaves groups the vertices for teardown. Wave 0 holds the vertices that
// nothing depends on; wave k holds the vertices all of whose dependents are in
// earlier waves, at least one of them in wave k-1. Deleting wave after wave never
// deletes a vertex before a vertex that depends on it, and the vertices of one
// wave can be deleted together. Each wave is in insertion order; a Graph without
// vertices has no waves.
func (g *Graph) ReverseWaves() ([][]string, error) {
	sorted, err := g.TopologicalSort()
	if err != nil {
		return nil, err
	}

	// Walking the topological order backwards meets every vertex after all of its
	// dependents, so its wave is final when it is met.
	wave := make(map[string]int, len(sorted))
	waves := 0
	for i := len(sorted) - 1; i >= 0; i-- {
		vertex := sorted[i]
		w := 0
		for _, dependent := range g.dependents[vertex] {
			w = max(w, wave[dependent]+1)
		}
		wave[vertex] = w
		waves = max(waves, w+1)
	}

	result := make([][]string, waves)
	for _, vertex := range g.vertices {
		result[wave[vertex]] = append(result[wave[vertex]], vertex)
	}
	return result, nil
}

// Sortable returns a copy of g that TopologicalSort and ReverseWaves accept:
// without its edges to vertices never added, and without the edge that closes
// each cycle (the back edge a depth-first search in insertion order meets).
// Every other edge is kept, so that what can still be ordered is: a Bundle
// deleted while its spec names a missing resource, or has a cycle, is torn
// down dependents first all the same, not in one wave.
func (g *Graph) Sortable() *Graph {
	state := make(map[string]int, len(g.vertices))
	closing := map[edge]bool{}
	var visit func(vertex string)
	visit = func(vertex string) {
		state[vertex] = inProgress
		for _, dependency := range g.dependencies[vertex] {
			switch {
			case !g.added[dependency]:
			case state[dependency] == inProgress:
				closing[edge{from: vertex, to: dependency}] = true
			case state[dependency] == 0:
				visit(dependency)
			}
		}
		state[vertex] = done
	}
	for _, vertex := range g.vertices {
		if state[vertex] == 0 {
			visit(vertex)
		}
	}
	sortable := New()
	for _, vertex := range g.vertices {
		sortable.AddVertex(vertex)
	}
	for _, e := range g.edges {
		if g.added[e.to] && !closing[e] {
			sortable.AddEdge(e.from, e.to)
		}
	}
	return sortable
}

// checkEdges returns a *MissingVertexError for the first edge, in insertion
// order, whose dependency was never added.
func (g *Graph) checkEdges() error {
	for _, e := range g.edges {
		if !g.added[e.to] {
			return &MissingVertexError{From: e.from, To: e.to}
		}
	}
	return nil
}

// clone returns a copy of s, so that callers cannot modify the Graph through the
// slices it returns; it returns nil for an empty s.
func clone(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return append([]string(nil), s...)
}
