package graph

import (
	"errors"
	"reflect"
	"testing"

	"github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// spec describes a graph for a test: vertices in insertion order, then edges in
// insertion order as {from, to} pairs.
type spec struct {
	vertices []string
	edges    [][2]string
}

func (s spec) build() *Graph {
	g := New()
	for _, v := range s.vertices {
		g.AddVertex(v)
	}
	for _, e := range s.edges {
		g.AddEdge(e[0], e[1])
	}
	return g
}

// smith is the example of atlassian/smith: a -> c, b, c -> b, d -> e, e.
var smith = spec{
	vertices: []string{"a", "b", "c", "d", "e"},
	edges:    [][2]string{{"a", "c"}, {"c", "b"}, {"d", "e"}},
}

// diamond is a -> b, a -> c, b -> d, c -> d.
var diamond = spec{
	vertices: []string{"a", "b", "c", "d"},
	edges:    [][2]string{{"a", "b"}, {"a", "c"}, {"b", "d"}, {"c", "d"}},
}

// chain is a -> b -> c.
var chain = spec{
	vertices: []string{"a", "b", "c"},
	edges:    [][2]string{{"a", "b"}, {"b", "c"}},
}

func TestTopologicalSort(t *testing.T) {
	tests := []struct {
		name string
		spec spec
		want []string
	}{
		{
			name: "empty",
			want: []string{},
		},
		{
			name: "independent vertices keep insertion order",
			spec: spec{vertices: []string{"z", "a", "m"}},
			want: []string{"z", "a", "m"},
		},
		{
			name: "smith example",
			spec: smith,
			want: []string{"b", "c", "a", "e", "d"},
		},
		{
			name: "chain",
			spec: chain,
			want: []string{"c", "b", "a"},
		},
		{
			name: "diamond",
			spec: diamond,
			want: []string{"d", "b", "c", "a"},
		},
		{
			name: "dependencies visited in edge insertion order",
			spec: spec{
				vertices: []string{"a", "b", "c"},
				edges:    [][2]string{{"a", "c"}, {"a", "b"}},
			},
			want: []string{"c", "b", "a"},
		},
		{
			name: "dependency declared after its dependent",
			spec: spec{
				vertices: []string{"app", "db"},
				edges:    [][2]string{{"app", "db"}},
			},
			want: []string{"db", "app"},
		},
		{
			name: "duplicate vertices and edges are ignored",
			spec: spec{
				vertices: []string{"a", "b", "a", "b"},
				edges:    [][2]string{{"a", "b"}, {"a", "b"}},
			},
			want: []string{"b", "a"},
		},
		{
			name: "edge adds its dependent vertex",
			spec: spec{
				vertices: []string{"b"},
				edges:    [][2]string{{"a", "b"}},
			},
			want: []string{"b", "a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.spec.build().TopologicalSort()
			if err != nil {
				t.Fatalf("TopologicalSort() error = %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("TopologicalSort() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestTopologicalSortIsDeterministic guards against ordering by map iteration,
// which would show up as a different order on some run.
func TestTopologicalSortIsDeterministic(t *testing.T) {
	want, err := smith.build().TopologicalSort()
	if err != nil {
		t.Fatalf("TopologicalSort() error = %v", err)
	}
	for i := 0; i < 100; i++ {
		got, err := smith.build().TopologicalSort()
		if err != nil {
			t.Fatalf("TopologicalSort() error = %v", err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("run %d: TopologicalSort() = %q, want %q", i, got, want)
		}
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name    string
		spec    spec
		wantErr error
		wantMsg string
	}{
		{
			name:    "self reference",
			spec:    spec{vertices: []string{"a"}, edges: [][2]string{{"a", "a"}}},
			wantErr: &CycleError{Path: []string{"a", "a"}},
			wantMsg: "dependency cycle: a -> a",
		},
		{
			name: "two-cycle",
			spec: spec{
				vertices: []string{"a", "b"},
				edges:    [][2]string{{"a", "b"}, {"b", "a"}},
			},
			wantErr: &CycleError{Path: []string{"a", "b", "a"}},
			wantMsg: "dependency cycle: a -> b -> a",
		},
		{
			name: "longer cycle",
			spec: spec{
				vertices: []string{"a", "b", "c"},
				edges:    [][2]string{{"a", "b"}, {"b", "c"}, {"c", "a"}},
			},
			wantErr: &CycleError{Path: []string{"a", "b", "c", "a"}},
			wantMsg: "dependency cycle: a -> b -> c -> a",
		},
		{
			// b is done before the cycle a -> c -> a closes: not on its path.
			name: "cycle after a finished branch",
			spec: spec{
				vertices: []string{"a", "b", "c"},
				edges:    [][2]string{{"a", "b"}, {"a", "c"}, {"c", "a"}},
			},
			wantErr: &CycleError{Path: []string{"a", "c", "a"}},
			wantMsg: "dependency cycle: a -> c -> a",
		},
		{
			name: "cycle reached through a vertex outside it",
			spec: spec{
				vertices: []string{"x", "a", "b", "c"},
				edges:    [][2]string{{"x", "a"}, {"a", "b"}, {"b", "c"}, {"c", "b"}},
			},
			wantErr: &CycleError{Path: []string{"b", "c", "b"}},
			wantMsg: "dependency cycle: b -> c -> b",
		},
		{
			name: "missing vertex",
			spec: spec{
				vertices: []string{"x"},
				edges:    [][2]string{{"x", "y"}},
			},
			wantErr: &MissingVertexError{From: "x", To: "y"},
			wantMsg: `resource "x" references missing resource "y"`,
		},
		{
			name: "first missing vertex in edge order",
			spec: spec{
				vertices: []string{"a", "b"},
				edges:    [][2]string{{"b", "y"}, {"a", "z"}},
			},
			wantErr: &MissingVertexError{From: "b", To: "y"},
			wantMsg: `resource "b" references missing resource "y"`,
		},
		{
			name: "missing vertex reported before a cycle",
			spec: spec{
				vertices: []string{"a", "b"},
				edges:    [][2]string{{"a", "b"}, {"b", "a"}, {"b", "y"}},
			},
			wantErr: &MissingVertexError{From: "b", To: "y"},
			wantMsg: `resource "b" references missing resource "y"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := tt.spec.build()
			for _, method := range []struct {
				name string
				call func() error
			}{
				{"TopologicalSort", func() error { _, err := g.TopologicalSort(); return err }},
				{"ReverseWaves", func() error { _, err := g.ReverseWaves(); return err }},
			} {
				err := method.call()
				if err == nil {
					t.Fatalf("%s() error = nil, want %q", method.name, tt.wantMsg)
				}
				if err.Error() != tt.wantMsg {
					t.Errorf("%s() error = %q, want %q", method.name, err, tt.wantMsg)
				}
				if !reflect.DeepEqual(err, tt.wantErr) {
					t.Errorf("%s() error = %#v, want %#v", method.name, err, tt.wantErr)
				}
			}
		})
	}
}

func TestErrorsAs(t *testing.T) {
	_, err := spec{vertices: []string{"a"}, edges: [][2]string{{"a", "a"}}}.build().TopologicalSort()
	var cycle *CycleError
	if !errors.As(err, &cycle) || cycle.Path[0] != "a" {
		t.Errorf("errors.As(%v, *CycleError) failed or blames the wrong resource", err)
	}

	_, err = spec{vertices: []string{"a"}, edges: [][2]string{{"a", "b"}}}.build().TopologicalSort()
	var missing *MissingVertexError
	if !errors.As(err, &missing) || missing.From != "a" {
		t.Errorf("errors.As(%v, *MissingVertexError) failed or blames the wrong resource", err)
	}
}

func TestReverseWaves(t *testing.T) {
	tests := []struct {
		name string
		spec spec
		want [][]string
	}{
		{
			name: "empty",
			want: [][]string{},
		},
		{
			name: "independent vertices form one wave in insertion order",
			spec: spec{vertices: []string{"z", "a", "m"}},
			want: [][]string{{"z", "a", "m"}},
		},
		{
			name: "chain",
			spec: chain,
			want: [][]string{{"a"}, {"b"}, {"c"}},
		},
		{
			name: "diamond",
			spec: diamond,
			want: [][]string{{"a"}, {"b", "c"}, {"d"}},
		},
		{
			name: "smith example",
			spec: smith,
			want: [][]string{{"a", "d"}, {"c", "e"}, {"b"}},
		},
		{
			// c is needed by a directly and by b, which is in wave 1, so c must
			// wait for wave 2 even though a is in wave 0.
			name: "vertex waits for its last dependent",
			spec: spec{
				vertices: []string{"a", "b", "c"},
				edges:    [][2]string{{"a", "c"}, {"a", "b"}, {"b", "c"}},
			},
			want: [][]string{{"a"}, {"b"}, {"c"}},
		},
		{
			// The search meets v (through r) before a: the wave keeps insertion order.
			name: "a wave in insertion order, not in the search's",
			spec: spec{
				vertices: []string{"r", "a", "v", "s"},
				edges:    [][2]string{{"r", "v"}, {"s", "a"}},
			},
			want: [][]string{{"r", "s"}, {"a", "v"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.spec.build().ReverseWaves()
			if err != nil {
				t.Fatalf("ReverseWaves() error = %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ReverseWaves() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDependencies(t *testing.T) {
	g := spec{
		vertices: []string{"a", "b", "c", "d"},
		edges:    [][2]string{{"a", "c"}, {"a", "b"}, {"d", "b"}, {"c", "b"}, {"a", "c"}},
	}.build()

	tests := []struct {
		vertex           string
		wantDependencies []string
	}{
		{vertex: "a", wantDependencies: []string{"c", "b"}},
		{vertex: "b"},
		{vertex: "c", wantDependencies: []string{"b"}},
		{vertex: "d", wantDependencies: []string{"b"}},
		{vertex: "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.vertex, func(t *testing.T) {
			if got := g.Dependencies(tt.vertex); !reflect.DeepEqual(got, tt.wantDependencies) {
				t.Errorf("Dependencies(%q) = %q, want %q", tt.vertex, got, tt.wantDependencies)
			}
		})
	}
}

// TestReturnedSlicesAreCopies guards the Graph against callers that modify what
// it returns.
func TestReturnedSlicesAreCopies(t *testing.T) {
	g := chain.build()
	g.Dependencies("a")[0] = "x"

	got, err := g.TopologicalSort()
	if err != nil {
		t.Fatalf("TopologicalSort() error = %v", err)
	}
	if want := []string{"c", "b", "a"}; !reflect.DeepEqual(got, want) {
		t.Errorf("TopologicalSort() = %q, want %q", got, want)
	}
}

func TestForResources(t *testing.T) {
	resources := []v1alpha1.Resource{
		{
			Name: "app",
			References: []v1alpha1.Reference{
				{Name: "host", Resource: "db", Path: "data.host"},
				{Name: "port", Resource: "db", Path: "data.port"},
				{Resource: "secret"},
			},
		},
		{Name: "db"},
		{Name: "secret"},
	}
	g := ForResources(resources)

	if got, want := g.Dependencies("app"), []string{"db", "secret"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Dependencies(app) = %q, want %q", got, want)
	}
	got, err := g.TopologicalSort()
	if err != nil {
		t.Fatalf("TopologicalSort() error = %v", err)
	}
	if want := []string{"db", "secret", "app"}; !reflect.DeepEqual(got, want) {
		t.Errorf("TopologicalSort() = %q, want %q", got, want)
	}
}

// Sortable drops what keeps a graph from being sorted — edges to vertices never
// added, and the edge that closes each cycle — and keeps every other edge, so
// that a teardown of a Bundle whose spec became invalid still deletes
// dependents before what they depend on.
func TestSortable(t *testing.T) {
	tests := []struct {
		name string
		spec spec
		want [][]string // its ReverseWaves
	}{
		{name: "a valid graph is kept whole", spec: smith, want: [][]string{{"a", "d"}, {"c", "e"}, {"b"}}},
		{
			name: "a dangling edge is dropped, the others kept",
			spec: spec{vertices: []string{"db", "app", "web"}, edges: [][2]string{{"app", "db"}, {"app", "cache"}, {"web", "app"}}},
			want: [][]string{{"web"}, {"app"}, {"db"}},
		},
		{
			// The search from db meets web, app, then db again: app -> db
			// closes the cycle and goes.
			name: "the edge that closes a cycle is dropped",
			spec: spec{vertices: []string{"db", "app", "web"}, edges: [][2]string{{"app", "db"}, {"web", "app"}, {"db", "web"}}},
			want: [][]string{{"db"}, {"web"}, {"app"}},
		},
		{
			name: "a self-reference is dropped",
			spec: spec{vertices: []string{"a", "b"}, edges: [][2]string{{"a", "a"}, {"b", "a"}}},
			want: [][]string{{"b"}, {"a"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := tt.spec.build()
			got, err := g.Sortable().ReverseWaves()
			if err != nil {
				t.Fatalf("Sortable().ReverseWaves() error = %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Sortable().ReverseWaves() = %q, want %q", got, tt.want)
			}
			if _, err := g.TopologicalSort(); (err == nil) != (tt.name == "a valid graph is kept whole") {
				t.Errorf("the original graph changed: TopologicalSort() error = %v", err)
			}
		})
	}
}
