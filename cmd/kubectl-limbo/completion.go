package main

import (
	"context"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/fanout"
	"github.com/limbo-dev/limbo/pkg/limboscan"
	"github.com/limbo-dev/limbo/pkg/listpages"
	"github.com/limbo-dev/limbo/pkg/softdelete"
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
	return filterPrefix(o.names(cmd, corev1.SchemeGroupVersion.WithKind("NamespaceList")), toComplete), cobra.ShellCompDirectiveNoFileComp
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
	return filterPrefix(o.names(cmd, limbov1alpha1.GroupVersion.WithKind("BundleList"), client.InNamespace(namespace)), toComplete),
		cobra.ShellCompDirectiveNoFileComp
}

// names lists the objects of the list kind listGVK, metadata only, in pages of
// defaultChunkSize, and returns their names; nothing when they cannot be
// listed.
func (o *options) names(cmd *cobra.Command, listGVK schema.GroupVersionKind, opts ...client.ListOption) []string {
	c, err := o.clients.Client()
	if err != nil {
		return nil
	}
	var names []string
	err = listpages.Each(cmd.Context(), c, func() *metav1.PartialObjectMetadataList {
		page := &metav1.PartialObjectMetadataList{}
		page.SetGroupVersionKind(listGVK)
		return page
	}, func(page *metav1.PartialObjectMetadataList) {
		for _, item := range page.Items {
			names = append(names, item.Name)
		}
	}, append(opts, client.Limit(defaultChunkSize))...)
	if err != nil {
		return nil
	}
	return names
}

// objectNames are the names of the objects of t's type in t's namespace that a
// command accepts (t names none).
type objectNames func(ctx context.Context, c client.Client, t target) ([]string, error)

// completeObjects completes the TYPE/NAME or TYPE NAME argument of expedite and
// cancel: first the resource types that can hold objects in limbo (as kubectl
// api-resources -o name prints them: configmaps, deployments.apps), then the
// objects of that type that the command accepts, which names lists.
func (o *options) completeObjects(names objectNames) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		switch {
		case len(args) == 0 && strings.Contains(toComplete, "/"):
			typ, _, _ := strings.Cut(toComplete, "/")
			return filterPrefix(o.objectNames(cmd, names, typ, typ+"/"), toComplete), cobra.ShellCompDirectiveNoFileComp
		case len(args) == 0:
			return filterPrefix(o.resourceTypes(), toComplete), cobra.ShellCompDirectiveNoFileComp
		case len(args) == 1 && !strings.Contains(args[0], "/"):
			return filterPrefix(o.objectNames(cmd, names, args[0], ""), toComplete), cobra.ShellCompDirectiveNoFileComp
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
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

// objectNames are what names lists of type typ in the namespace, each after
// prefix; nothing when they cannot be listed.
func (o *options) objectNames(cmd *cobra.Command, names objectNames, typ, prefix string) []string {
	// The name only completes the arguments; resolve reads no object.
	t, c, err := o.resolveWithClient([]string{typ, "-"})
	if err != nil {
		return nil
	}
	found, err := names(cmd.Context(), c, t)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(found))
	for _, name := range found {
		out = append(out, prefix+name)
	}
	return out
}

// namesToExpedite are the names of the objects of t's type that expedite
// accepts, judged from the object alone (checkExpedite): in limbo (labelled
// limbo.dev/pending-deletion), Tombstones included, stamped, with a valid
// delay, and not being deleted. Whether the object's Bundle declares it again,
// which refuses some more, is left to expedite, which says why.
func namesToExpedite(ctx context.Context, c client.Client, t target) ([]string, error) {
	objects, err := limboscan.List(ctx, c, t.mapping.GroupVersionKind, t.namespace, nil, client.Limit(defaultChunkSize))
	if err != nil {
		return nil, err
	}
	var names []string
	for i := range objects {
		if check, err := checkExpedite(t, &objects[i]); err == nil && check.verdict == expeditable {
			names = append(names, objects[i].Name)
		}
	}
	return names, nil
}

// namesToCancel are the names of the objects of t's type that cancel accepts:
// those in limbo (labelled limbo.dev/pending-deletion) and the orphans that
// only their Bundle's status.pendingDeletions lists, never stamped nor
// labelled (held while a resource of the Bundle is not Ready, an invalid
// delay), which cancel takes out of limbo too (refuseUnlessInLimbo); not those
// it refuses from the object alone (refuseToCancel: being deleted, a plugin's
// item), nor any Tombstone (cancel refuses them all: the plugin would find the
// item again). Whether the object's Bundle declares it again, which refuses some
// more, is left to cancel, which says why. The Bundles are those of the
// namespace: an object is managed by a Bundle of its own namespace.
func namesToCancel(ctx context.Context, c client.Client, t target) ([]string, error) {
	gk := t.mapping.GroupVersionKind.GroupKind()
	if isTombstone(gk) {
		return nil, nil
	}
	objects, err := limboscan.List(ctx, c, t.mapping.GroupVersionKind, t.namespace, nil, client.Limit(defaultChunkSize))
	if err != nil {
		return nil, err
	}
	var names []string
	seen := map[string]bool{}
	for i := range objects {
		obj := &objects[i]
		seen[obj.Name] = true
		if refuseToCancel(t, obj) == nil {
			names = append(names, obj.Name)
		}
	}
	bundles, err := namespaceBundles(ctx, c, t.namespace)
	if err != nil {
		return names, nil // the labelled ones are still offered
	}
	// The orphans only a status lists (held, never stamped): each is read, side
	// by side (a Bundle that is not Ready may hold a thousand).
	var statusOnly []string
	for i := range bundles {
		b := &bundles[i]
		for j := range b.Status.PendingDeletions {
			entry := &b.Status.PendingDeletions[j]
			if seen[entry.Name] || !entryOf(b, entry, gk, t.namespace) {
				continue
			}
			seen[entry.Name] = true
			statusOnly = append(statusOnly, entry.Name)
		}
	}
	offered := make([]bool, len(statusOnly))
	fanout.Each(concurrentReads, len(statusOnly), func(i int) {
		obj, err := getMetadata(ctx, c, target{mapping: t.mapping, namespace: t.namespace, name: statusOnly[i]})
		offered[i] = err == nil && refuseToCancel(t, obj) == nil && (softdelete.HasLimboMark(obj) || softdelete.BundleControllerOf(obj) != nil)
	})
	for i, name := range statusOnly {
		if offered[i] {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
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
