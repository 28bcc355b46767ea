package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// testNow is the clock of the tests; it is not on a second boundary, as a
// real clock is not.
var testNow = time.Date(2026, 3, 1, 12, 0, 0, 700_000_000, time.UTC)

// testDiscovery is the discovery of the tests: the kinds of defaultResources,
// cached in memory as kubectl caches discovery. A non-nil err is returned, with
// what is found, by ServerPreferredResources, as by a partial
// discovery failure.
type testDiscovery struct {
	discovery.CachedDiscoveryInterface
	err error
}

func (d testDiscovery) ServerPreferredResources() ([]*metav1.APIResourceList, error) {
	lists, err := d.CachedDiscoveryInterface.ServerPreferredResources()
	if d.err != nil {
		return lists, d.err
	}
	return lists, err
}

func newTestDiscovery(lists []*metav1.APIResourceList, err error) testDiscovery {
	fake := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: lists}}
	return testDiscovery{CachedDiscoveryInterface: memory.NewMemCacheClient(fake), err: err}
}

var listVerbs = metav1.Verbs{"get", "list", "watch", "create", "update", "patch", "delete"}

// defaultResources are the resource types of the test cluster.
func defaultResources() []*metav1.APIResourceList {
	return []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "configmaps", SingularName: "configmap", ShortNames: []string{"cm"}, Kind: "ConfigMap", Namespaced: true, Verbs: listVerbs},
			{Name: "secrets", SingularName: "secret", Kind: "Secret", Namespaced: true, Verbs: listVerbs},
			{Name: "namespaces", SingularName: "namespace", ShortNames: []string{"ns"}, Kind: "Namespace", Namespaced: false, Verbs: listVerbs},
			{Name: "bindings", SingularName: "binding", Kind: "Binding", Namespaced: true, Verbs: metav1.Verbs{"create"}},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", SingularName: "deployment", ShortNames: []string{"deploy"}, Kind: "Deployment", Namespaced: true, Verbs: listVerbs},
			{Name: "deployments/status", Kind: "Deployment", Namespaced: true, Verbs: metav1.Verbs{"get", "patch"}},
		}},
		{GroupVersion: "limbo.dev/v1alpha1", APIResources: []metav1.APIResource{
			{Name: "bundles", SingularName: "bundle", ShortNames: []string{"bdl"}, Kind: "Bundle", Namespaced: true, Verbs: listVerbs, Categories: []string{"limbo"}},
			{Name: "tombstones", SingularName: "tombstone", Kind: "Tombstone", Namespaced: true, Verbs: listVerbs, Categories: []string{"limbo"}},
		}},
	}
}

// testClients is a clientFactory of fakes: discovery, the RESTMapper built
// from it as kubectl builds its own, a fake client, and -n honoured.
type testClients struct {
	flags     *genericclioptions.ConfigFlags
	client    client.Client
	discovery discovery.CachedDiscoveryInterface
}

func (f *testClients) ToRESTConfig() (*rest.Config, error) {
	// The resource builder makes a REST client from it; nothing connects.
	return &rest.Config{Host: "https://limbo.invalid"}, nil
}
func (f *testClients) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return f.discovery, nil
}
func (f *testClients) ToRESTMapper() (meta.RESTMapper, error) { return testMapper(f.discovery), nil }
func (f *testClients) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	config := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"test": {Server: "https://limbo.invalid"}},
		Contexts:       map[string]*clientcmdapi.Context{"test": {Cluster: "test"}},
		CurrentContext: "test",
	}
	overrides := &clientcmd.ConfigOverrides{}
	if f.flags != nil && f.flags.Namespace != nil {
		overrides.Context.Namespace = *f.flags.Namespace
	}
	return clientcmd.NewDefaultClientConfig(config, overrides)
}
func (f *testClients) Client() (client.Client, error) { return f.client, nil }

// testMapper resolves short names and categories like kubectl's RESTMapper.
func testMapper(d discovery.CachedDiscoveryInterface) meta.RESTMapper {
	return restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(d), d, nil)
}

// fixture holds fake clients over the same objects.
type fixture struct {
	clients *testClients
	client  client.Client
}

// newFixture returns fake clients that hold objs.
func newFixture(t *testing.T, funcs *interceptor.Funcs, objs ...client.Object) *fixture {
	t.Helper()
	d := newTestDiscovery(defaultResources(), nil)
	builder := fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(testMapper(d)).WithObjects(objs...)
	if funcs != nil {
		builder = builder.WithInterceptorFuncs(*funcs)
	}
	c := builder.Build()
	return &fixture{clients: &testClients{client: c, discovery: d}, client: c}
}

// run runs the plugin with args against the fixture at testNow and returns its
// exit code, stdout and stderr.
func (f *fixture) run(args ...string) (int, string, string) {
	return f.runAt(testNow, args...)
}

// runAt is run with the plugin's clock at now (the machine it runs on may be
// ahead of the controller's, whose clock wrote the stamps).
func (f *fixture) runAt(now time.Time, args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}
	newClients := func(flags *genericclioptions.ConfigFlags) clientFactory {
		clients := *f.clients
		clients.flags = flags
		return &clients
	}
	code := run(context.Background(), args, streams, newClients, func() time.Time { return now })
	return code, out.String(), errOut.String()
}

func stampAgo(d time.Duration) string {
	return testNow.Add(-d).UTC().Truncate(time.Second).Format(time.RFC3339)
}

func uid(name string) types.UID { return types.UID("uid-" + name) }

func ptr[T any](v T) *T { return &v }

// inLimbo returns the metadata of an object in limbo of Bundle bundle.
func inLimbo(namespace, name, bundle, delay, stamp string) metav1.ObjectMeta {
	m := metav1.ObjectMeta{
		Namespace: namespace, Name: name, UID: uid(namespace + "-" + name),
		Labels:      map[string]string{limbov1alpha1.LabelBundle: bundle, limbov1alpha1.LabelPendingDeletion: "true"},
		Annotations: map[string]string{},
	}
	if delay != "" {
		m.Annotations[limbov1alpha1.AnnotationDeletionDelay] = delay
	}
	if stamp != "" {
		m.Annotations[limbov1alpha1.AnnotationDeletionTimestamp] = stamp
	}
	if bundle != "" {
		// Its Bundle counts it down: it controls it (the fixtures' Bundles have
		// the UID uid(name)).
		m.OwnerReferences = []metav1.OwnerReference{{APIVersion: limbov1alpha1.GroupVersion.String(), Kind: "Bundle", Name: bundle, UID: uid(bundle), Controller: ptr(true)}}
	}
	return m
}

// releasedBy marks m, an object in limbo (inLimbo), released by a teardown at
// stamp: controlled by nobody, the reaper's.
func releasedBy(m metav1.ObjectMeta, stamp string) metav1.ObjectMeta {
	m.Annotations[limbov1alpha1.AnnotationReleased] = stamp
	m.OwnerReferences = nil
	return m
}

// trimTrailingSpaces removes the spaces at the end of each line: kubectl's
// table printer pads the cell before an empty last column, as kubectl get does.
func trimTrailingSpaces(s string) string {
	lines := strings.Split(s, "\n")
	for i, line := range lines {
		lines[i] = strings.TrimRight(line, " ")
	}
	return strings.Join(lines, "\n")
}
