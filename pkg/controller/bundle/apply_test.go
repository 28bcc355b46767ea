package bundle

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/client-go/tools/record"

	"github.com/limbo-dev/limbo/pkg/bundlespec"
	"github.com/limbo-dev/limbo/pkg/graph"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

func TestAppliedEvent(t *testing.T) {
	change := func(resource, event string) *appliedChange {
		return &appliedChange{resource: resource, kind: "ConfigMap", name: resource, event: event}
	}
	many := make([]*appliedChange, maxChangesInEvent+3)
	for i := range many {
		many[i] = change(fmt.Sprintf("c%d", i), limbov1alpha1.EventCreated)
	}
	cases := []struct {
		name    string
		changes []*appliedChange
		want    string // "" for no event
	}{
		{"no write, no event", nil, ""},
		{"one change: the event it always was", []*appliedChange{change("db", limbov1alpha1.EventUpdated)},
			`Normal Updated resource "db": ConfigMap db updated`},
		{"one kind of change: its reason", []*appliedChange{change("a", limbov1alpha1.EventCreated), change("b", limbov1alpha1.EventCreated)},
			`Normal Created resource "a": ConfigMap a created; resource "b": ConfigMap b created`},
		{"mixed: Applied, in the given order", []*appliedChange{change("b", limbov1alpha1.EventAdopted), change("a", limbov1alpha1.EventCreated)},
			`Normal Applied resource "b": ConfigMap b adopted; resource "a": ConfigMap a created`},
		{"bounded", many, "Normal Created " + strings.Join(func() []string {
			var parts []string
			for _, c := range many[:maxChangesInEvent] {
				parts = append(parts, c.String())
			}
			return append(parts, "and 3 more")
		}(), "; ")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(10)
			p := &pass{r: &Reconciler{Recorder: rec}, bundle: &limbov1alpha1.Bundle{}}
			p.emitAppliedEvent(tc.changes)
			close(rec.Events)
			var got []string
			for e := range rec.Events {
				got = append(got, e)
			}
			switch {
			case tc.want == "" && len(got) != 0:
				t.Fatalf("events %q, want none", got)
			case tc.want != "" && (len(got) != 1 || got[0] != tc.want):
				t.Fatalf("events %q, want exactly %q", got, tc.want)
			}
		})
	}
}

func TestWaves(t *testing.T) {
	res := func(name string, deps ...string) limbov1alpha1.Resource {
		r := limbov1alpha1.Resource{Name: name}
		for _, d := range deps {
			r.References = append(r.References, limbov1alpha1.Reference{Resource: d})
		}
		return r
	}
	cases := []struct {
		name      string
		resources []limbov1alpha1.Resource
		want      [][]string
	}{
		{"none", nil, nil},
		{"independent: one wave, declaration order", []limbov1alpha1.Resource{res("b"), res("a"), res("c")}, [][]string{{"b", "a", "c"}}},
		{"a chain: one per wave", []limbov1alpha1.Resource{res("app", "cfg"), res("cfg", "ns"), res("ns")}, [][]string{{"ns"}, {"cfg"}, {"app"}}},
		{"by the deepest dependency", []limbov1alpha1.Resource{res("db"), res("cfg"), res("app", "db", "cfg"), res("web", "app"), res("job", "db")},
			[][]string{{"db", "cfg"}, {"app", "job"}, {"web"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := graph.ForResources(tc.resources)
			order, err := g.TopologicalSort()
			if err != nil {
				t.Fatal(err)
			}
			plan := &bundlespec.Plan{Order: order, Graph: g}
			var got [][]string
			for _, wave := range waves(plan) {
				var names []string
				for _, i := range wave {
					names = append(names, order[i])
				}
				got = append(got, names)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("waves %v, want %v", got, tc.want)
			}
		})
	}
}
