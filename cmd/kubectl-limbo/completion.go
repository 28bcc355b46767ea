package main

import (
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/limboscan"
)

// Shell completion. cobra's `completion` command prints the scripts for bash,
// zsh, fish and powershell; kubectl (1.26+) completes `kubectl limbo ...` by
// running kubectl_complete-limbo (cmd/kubectl-limbo/kubectl_complete-limbo),
// which asks cobra's hidden __complete command. The functions here are what
// __complete answers with: they never fail, they offer nothing when the cluster
// cannot be asked.

// registerCompletions adds the completion of -n/--namespace to root.
func registerCompletions(root *cobra.Command, o *options) {
	_ = root.RegisterFlagCompletionFunc("namespace", o.completeNamespaces)
}

// completeNamespaces offers the names of the namespaces.
func (o *options) completeNamespaces(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return filterPrefix(o.names(cmd, &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "NamespaceList"}}),
		toComplete), cobra.ShellCompDirectiveNoFileComp
}

// completeBundles offers the names of the Bundles of the namespace, for the
// one argument of `graph`.
func (o *options) completeBundles(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	namespace, err := o.namespace()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	bundles := &metav1.PartialObjectMetadataList{}
	bundles.SetGroupVersionKind(limbov1alpha1.GroupVersion.WithKind("BundleList"))
	return filterPrefix(o.names(cmd, bundles, client.InNamespace(namespace)), toComplete), cobra.ShellCompDirectiveNoFileComp
}

// names lists the objects of list's kind, metadata only, and returns their
// names; nothing when they cannot be listed.
func (o *options) names(cmd *cobra.Command, list *metav1.PartialObjectMetadataList, opts ...client.ListOption) []string {
	c, err := o.clients.Client()
	if err != nil {
		return nil
	}
	if err := c.List(cmd.Context(), list, opts...); err != nil {
		return nil
	}
	names := make([]string, 0, len(list.Items))
	for _, item := range list.Items {
		names = append(names, item.Name)
	}
	return names
}

// completeInLimbo completes the TYPE/NAME or TYPE NAME argument of expedite and
// cancel: first the resource types that can hold objects in limbo (as kubectl
// api-resources -o name prints them: configmaps, deployments.apps), then the
// objects of that type that are in limbo.
func (o *options) completeInLimbo(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	switch {
	case len(args) == 0 && strings.Contains(toComplete, "/"):
		typ, _, _ := strings.Cut(toComplete, "/")
		return filterPrefix(o.namesInLimbo(cmd, typ, typ+"/"), toComplete), cobra.ShellCompDirectiveNoFileComp
	case len(args) == 0:
		return filterPrefix(o.resourceTypes(), toComplete), cobra.ShellCompDirectiveNoFileComp
	case len(args) == 1 && !strings.Contains(args[0], "/"):
		return filterPrefix(o.namesInLimbo(cmd, args[0], ""), toComplete), cobra.ShellCompDirectiveNoFileComp
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}

// resourceTypes are the namespaced resource types that can be listed.
func (o *options) resourceTypes() []string {
	d, err := o.clients.ToDiscoveryClient()
	if err != nil {
		return nil
	}
	kinds, _ := limboscan.Kinds(d)
	names := make([]string, 0, len(kinds))
	for _, k := range kinds {
		name := k.Resource.Resource
		if k.Resource.Group != "" {
			name += "." + k.Resource.Group
		}
		names = append(names, name)
	}
	return names
}

// namesInLimbo are the names, each after prefix, of the objects of type typ
// that are in limbo in the namespace.
func (o *options) namesInLimbo(cmd *cobra.Command, typ, prefix string) []string {
	// The name only completes the arguments; resolve reads no object.
	t, c, err := o.resolveWithClient([]string{typ, "-"})
	if err != nil {
		return nil
	}
	objects, err := limboscan.List(cmd.Context(), c, t.mapping.GroupVersionKind, t.namespace, nil)
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(objects))
	for _, obj := range objects {
		names = append(names, prefix+obj.Name)
	}
	return names
}

func filterPrefix(candidates []string, prefix string) []string {
	var out []string
	for _, c := range candidates {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return out
}
