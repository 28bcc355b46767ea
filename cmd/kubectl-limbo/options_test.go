package main

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TYPE/NAME arguments are resolved by cli-runtime's resource builder, as
// kubectl resolves them: resources, kinds, singular and short names, groups,
// versions and categories' members.
func TestResolveTarget(t *testing.T) {
	f := newFixture(t, nil)
	clients := *f.clients
	clients.flags = genericclioptions.NewConfigFlags(false)
	ns := "team-a"
	clients.flags.Namespace = &ns
	o := &options{clients: &clients}
	for _, tc := range []struct {
		args []string
		want string
		ns   string
	}{
		{[]string{"configmap/x"}, "configmap/x", "team-a"},
		{[]string{"configmaps/x"}, "configmap/x", "team-a"},
		{[]string{"cm/x"}, "configmap/x", "team-a"},
		{[]string{"ConfigMap/x"}, "configmap/x", "team-a"},
		{[]string{"deployments.apps/x"}, "deployment.apps/x", "team-a"},
		{[]string{"deployments.v1.apps/x"}, "deployment.apps/x", "team-a"},
		{[]string{"deploy/x"}, "deployment.apps/x", "team-a"},
		{[]string{"Deployment.apps/x"}, "deployment.apps/x", "team-a"},
		{[]string{"tombstone/x"}, "tombstone.limbo.dev/x", "team-a"},
		{[]string{"tombstones.limbo.dev/x"}, "tombstone.limbo.dev/x", "team-a"},
		{[]string{"bundle", "x"}, "bundle.limbo.dev/x", "team-a"},
		{[]string{"bdl", "x"}, "bundle.limbo.dev/x", "team-a"},
		{[]string{"namespace/x"}, "namespace/x", ""},
	} {
		got, err := o.resolve(tc.args)
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

	for _, args := range [][]string{{"x"}, {"configmap"}, {"configmap/"}, {"/x"}, {"configmap/x/y"}, {"a", "b", "c"}, {"configmap/x", "configmap/y"}, {"gizmo/x"}} {
		if got, err := o.resolve(args); err == nil {
			t.Errorf("%v: no error, resolved to %s", args, got)
		}
	}
}

// The kubectl flags carry a warning printer, as kubectl's do: without one,
// cli-runtime's RESTMapper drops the warning that a short name could match
// another resource than the one taken. cli-runtime keeps it unexported; its
// presence is what can be told without an API server.
func TestConfigFlagsPrintWarnings(t *testing.T) {
	var flags *genericclioptions.ConfigFlags
	newRootCommand(genericiooptions.NewTestIOStreamsDiscard(), func(f *genericclioptions.ConfigFlags) clientFactory {
		flags = f
		return newKubeconfigFactory(f)
	}, nil)
	if reflect.ValueOf(flags).Elem().FieldByName("warningPrinter").IsNil() {
		t.Error("ConfigFlags without WithWarningPrinter: short-name ambiguity warnings are dropped")
	}
}
