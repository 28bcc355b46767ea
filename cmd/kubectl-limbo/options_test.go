package main

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
)

func TestResolveTarget(t *testing.T) {
	mapper := testMapper()
	for _, tc := range []struct {
		args []string
		want string
		ns   string
	}{
		{[]string{"configmap/x"}, "configmap/x", "team-a"},
		{[]string{"configmaps/x"}, "configmap/x", "team-a"},
		{[]string{"ConfigMap/x"}, "configmap/x", "team-a"},
		{[]string{"deployments.apps/x"}, "deployment.apps/x", "team-a"},
		{[]string{"deployments.v1.apps/x"}, "deployment.apps/x", "team-a"},
		{[]string{"Deployment.apps/x"}, "deployment.apps/x", "team-a"},
		{[]string{"tombstone/x"}, "tombstone.limbo.dev/x", "team-a"},
		{[]string{"tombstones.limbo.dev/x"}, "tombstone.limbo.dev/x", "team-a"},
		{[]string{"bundle", "x"}, "bundle.limbo.dev/x", "team-a"},
		{[]string{"namespace/x"}, "namespace/x", ""},
	} {
		got, err := resolveTarget(mapper, tc.args, "team-a")
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if got.String() != tc.want || got.namespace != tc.ns {
			t.Errorf("%v: %s in %q, want %s in %q", tc.args, got, got.namespace, tc.want, tc.ns)
		}
		if tc.ns == "" && got.mapping.Scope.Name() != meta.RESTScopeNameRoot {
			t.Errorf("%v: not cluster-scoped", tc.args)
		}
	}

	for _, args := range [][]string{{"x"}, {"configmap/"}, {"/x"}, {"configmap/x/y"}, {"a", "b", "c"}, {"configmap/x", "y"}, {"gizmo/x"}} {
		if _, err := resolveTarget(mapper, args, "team-a"); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
