package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/listpages/listpagestest"
)

// complete runs cobra's __complete, as kubectl_complete-limbo and the shell
// scripts do, and returns the candidates (without the directive line).
func (f *fixture) complete(t *testing.T, args ...string) []string {
	t.Helper()
	code, out, errOut := f.run(append([]string{"__complete"}, args...)...)
	if code != 0 {
		t.Fatalf("__complete %v: exit %d, stderr %q", args, code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if directive := lines[len(lines)-1]; directive != ":4" {
		t.Errorf("__complete %v: directive %q, want :4 (no file completion)", args, directive)
	}
	return lines[:len(lines)-1]
}

func TestCompletion(t *testing.T) {
	objects := append(pendingObjects(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
	)
	f := newFixture(t, nil, objects...)
	for _, tc := range []struct {
		args []string
		want string
	}{
		// Bundle names, in the namespace of -n.
		{[]string{"-n", "team-a", "graph", ""}, "shop"},
		{[]string{"-n", "team-a", "graph", "x"}, ""},
		{[]string{"graph", ""}, ""},
		{[]string{"-n", "team-a", "graph", "shop", ""}, ""}, // graph takes one Bundle
		// Namespaces, for every command.
		{[]string{"pending", "-n", ""}, "default team-a team-b"},
		{[]string{"graph", "--namespace", "team-"}, "team-a team-b"},
		// Resource types, then the objects of that type in limbo.
		{[]string{"expedite", ""}, "configmaps secrets deployments.apps bundles.limbo.dev tombstones.limbo.dev"},
		{[]string{"cancel", "deploy"}, "deployments.apps"},
		{[]string{"-n", "team-a", "expedite", "cm/"}, "cm/cache cm/db-config"},
		{[]string{"-n", "team-a", "expedite", "configmap/d"}, "configmap/db-config"},
		{[]string{"-n", "team-a", "cancel", "configmaps", ""}, "cache db-config negative"},
		{[]string{"-n", "team-a", "expedite", "tombstone", ""}, "storage-ns-gc-4f7c"},
		{[]string{"-n", "team-b", "expedite", "cm", ""}, "other"},
		{[]string{"-n", "team-a", "expedite", "gizmo", ""}, ""},
		{[]string{"-n", "team-a", "expedite", "cm", "db-config", ""}, ""},
	} {
		if got := strings.Join(f.complete(t, tc.args...), " "); got != tc.want {
			t.Errorf("completing %q: %q, want %q", tc.args, got, tc.want)
		}
	}
}

// cobra's completion command prints the shell scripts.
func TestCompletionScripts(t *testing.T) {
	f := newFixture(t, nil)
	for shell, want := range map[string]string{
		"bash": "# bash completion V2 for kubectl-limbo",
		"zsh":  "#compdef kubectl-limbo",
		"fish": "# fish completion for kubectl-limbo",
	} {
		code, out, errOut := f.run("completion", shell)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("completion %s: exit %d, stderr %q, no %q in the script", shell, code, errOut, want)
		}
	}
}

// cancel completes what cancel accepts: the objects in limbo and the orphans
// only their Bundle's status lists (held before their countdown, never
// stamped nor labelled), in order; not what it refuses from the object alone
// (an object being deleted, a plugin's item), nor any Tombstone, nor an object
// of the name of another kind's entry. Bundles that cannot be listed still
// leave the objects in limbo offered.
func TestCompletionOfCancel(t *testing.T) {
	controlledByShop := []metav1.OwnerReference{{APIVersion: limbov1alpha1.GroupVersion.String(), Kind: "Bundle", Name: "shop", UID: uid("shop"), Controller: ptr(true)}}
	pluginItem := inLimbo("team-a", "item", "", "10m", stampAgo(time.Minute))
	pluginItem.Annotations[limbov1alpha1.AnnotationPluginResource] = "team-a/shop/nodes"
	going := inLimbo("team-a", "going", "shop", "10m", stampAgo(time.Minute))
	going.DeletionTimestamp, going.Finalizers = &metav1.Time{Time: testNow}, []string{"example.com/hold"}
	objects := append(pendingObjects(),
		// Listed by Bundle shop as waiting for its resources to be Ready; its
		// controller, unstamped.
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "waiting", UID: uid("waiting"), OwnerReferences: controlledByShop,
			Labels: map[string]string{limbov1alpha1.LabelBundle: "shop"}}},
		// Listed by Bundle shop for its invalid delay, but no Bundle controls it
		// any more: cancel says it is not in limbo.
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "legacy", UID: uid("legacy")}},
		&corev1.ConfigMap{ObjectMeta: pluginItem},
		&corev1.ConfigMap{ObjectMeta: going},
		// Bundle shop lists the Deployment app, not this ConfigMap, which it
		// controls and declares.
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "app", UID: uid("app-config"), OwnerReferences: controlledByShop,
			Labels: map[string]string{limbov1alpha1.LabelBundle: "shop"}}},
		// Held by Bundle early, unstamped: its name comes before the others'.
		&limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "early", UID: uid("early")},
			Status: limbov1alpha1.BundleStatus{PendingDeletions: []limbov1alpha1.PendingDeletion{
				{APIVersion: "v1", Kind: "ConfigMap", Name: "aardvark", Message: "waiting for every resource of the Bundle to be Ready"}}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "aardvark", UID: uid("aardvark"),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: limbov1alpha1.GroupVersion.String(), Kind: "Bundle", Name: "early", UID: uid("early"), Controller: ptr(true)}},
			Labels:          map[string]string{limbov1alpha1.LabelBundle: "early"}}},
	)
	f := newFixture(t, nil, objects...)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-n", "team-a", "cancel", "configmaps", ""}, "aardvark cache db-config negative waiting"},
		{[]string{"-n", "team-a", "cancel", "cm/"}, "cm/aardvark cm/cache cm/db-config cm/negative cm/waiting"},
		{[]string{"-n", "team-a", "cancel", "tombstones", ""}, ""},
	} {
		if got := strings.Join(f.complete(t, tc.args...), " "); got != tc.want {
			t.Errorf("completing %q: %q, want %q", tc.args, got, tc.want)
		}
	}

	forbidBundles := &interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if _, ok := list.(*limbov1alpha1.BundleList); ok {
			return apierrors.NewForbidden(schema.GroupResource{Group: "limbo.dev", Resource: "bundles"}, "", errors.New("no"))
		}
		return c.List(ctx, list, opts...)
	}}
	f = newFixture(t, forbidBundles, objects...)
	if got := strings.Join(f.complete(t, "-n", "team-a", "cancel", "configmaps", ""), " "); got != "cache db-config negative" {
		t.Errorf("completing with the Bundles forbidden: %q, want the objects in limbo", got)
	}
}

// Completion reads every list in pages of defaultChunkSize, as pending does by
// default: the objects of a type, the Bundles whose status cancel's completion
// reads, the Bundles graph completes, the namespaces.
func TestCompletionReadsInPages(t *testing.T) {
	var mu sync.Mutex
	limits := map[string][]int64{} // list kind: the limit of each page read
	f := newFixture(t, &interceptor.Funcs{List: listpagestest.List(func(list client.ObjectList, o *client.ListOptions) {
		mu.Lock()
		defer mu.Unlock()
		kind := list.GetObjectKind().GroupVersionKind().Kind
		if kind == "" {
			kind = fmt.Sprintf("%T", list)
		}
		limits[kind] = append(limits[kind], o.Limit)
	})}, append(pendingObjects(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}})...)
	for _, args := range [][]string{
		{"-n", "team-a", "cancel", "configmaps", ""},
		{"-n", "team-a", "expedite", "cm/"},
		{"-n", "team-a", "graph", ""},
		{"pending", "-n", ""},
	} {
		f.complete(t, args...)
	}
	for _, kind := range []string{"ConfigMapList", "*v1alpha1.BundleList", "BundleList", "NamespaceList"} {
		if got := limits[kind]; len(got) == 0 || slices.ContainsFunc(got, func(limit int64) bool { return limit != defaultChunkSize }) {
			t.Errorf("%s read with the limits %v, want pages of %d", kind, got, defaultChunkSize)
		}
	}
}

// expedite completes what it accepts, judged from the object alone (as cancel's
// completion judges with refuseToCancel): a stamp to set back (an unparsable
// one too: expedite stamps anew), a valid delay, no deletion running — a
// plugin's item and a Tombstone as well. Not an object with an invalid delay or
// none, one labelled but not stamped yet, nor one or a Tombstone being deleted.
func TestCompletionOfExpedite(t *testing.T) {
	pluginItem := inLimbo("team-a", "item", "", "10m", stampAgo(time.Minute))
	pluginItem.Annotations[limbov1alpha1.AnnotationPluginResource] = "team-a/shop/nodes"
	going := inLimbo("team-a", "going", "shop", "10m", stampAgo(time.Minute))
	going.DeletionTimestamp, going.Finalizers = &metav1.Time{Time: testNow}, []string{"example.com/hold"}
	tombGoing := inLimbo("team-a", "shop-routes-1", "shop", "10m", stampAgo(time.Minute))
	tombGoing.DeletionTimestamp, tombGoing.Finalizers = &metav1.Time{Time: testNow}, []string{limbov1alpha1.FinalizerHardDelete}
	objects := append(pendingObjects(), // cache (unparsable stamp), db-config, negative (-5m), the Secret nodelay, a Tombstone
		&corev1.ConfigMap{ObjectMeta: pluginItem},
		&corev1.ConfigMap{ObjectMeta: going},
		&corev1.ConfigMap{ObjectMeta: inLimbo("team-a", "unstamped", "shop", "10m", "")},
		&limbov1alpha1.Tombstone{ObjectMeta: tombGoing},
	)
	f := newFixture(t, nil, objects...)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-n", "team-a", "expedite", "configmaps", ""}, "cache db-config item"},
		{[]string{"-n", "team-a", "expedite", "cm/"}, "cm/cache cm/db-config cm/item"},
		{[]string{"-n", "team-a", "expedite", "secrets", ""}, ""},
		{[]string{"-n", "team-a", "expedite", "tombstones", ""}, "storage-ns-gc-4f7c"},
	} {
		if got := strings.Join(f.complete(t, tc.args...), " "); got != tc.want {
			t.Errorf("completing %q: %q, want %q", tc.args, got, tc.want)
		}
	}
}
