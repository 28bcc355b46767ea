package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/metadata"
	metadatafake "k8s.io/client-go/metadata/fake"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// testNow is the clock of the tests; it is not on a second boundary, as a
// real clock is not.
var testNow = time.Date(2026, 3, 1, 12, 0, 0, 700_000_000, time.UTC)

// testMapper knows the kinds the tests use.
func testMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	m.Add(corev1.SchemeGroupVersion.WithKind("Secret"), meta.RESTScopeNamespace)
	m.Add(corev1.SchemeGroupVersion.WithKind("Namespace"), meta.RESTScopeRoot)
	m.Add(appsv1.SchemeGroupVersion.WithKind("Deployment"), meta.RESTScopeNamespace)
	m.Add(limbov1alpha1.BundleGVK, meta.RESTScopeNamespace)
	m.Add(limbov1alpha1.TombstoneGVK, meta.RESTScopeNamespace)
	return m
}

// testDiscovery is the discovery of the tests: the kinds of testMapper.
type testDiscovery struct {
	lists []*metav1.APIResourceList
	err   error
}

func (d testDiscovery) ServerPreferredNamespacedResourcesWithContext(context.Context) ([]*metav1.APIResourceList, error) {
	return d.lists, d.err
}

var listVerbs = metav1.Verbs{"get", "list", "watch", "create", "update", "patch", "delete"}

func defaultDiscovery() testDiscovery {
	return testDiscovery{lists: []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: listVerbs},
			{Name: "secrets", Kind: "Secret", Namespaced: true, Verbs: listVerbs},
			{Name: "bindings", Kind: "Binding", Namespaced: true, Verbs: metav1.Verbs{"create"}},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", Kind: "Deployment", Namespaced: true, Verbs: listVerbs},
			{Name: "deployments/status", Kind: "Deployment", Namespaced: true, Verbs: metav1.Verbs{"get", "patch"}},
		}},
		{GroupVersion: "limbo.dev/v1alpha1", APIResources: []metav1.APIResource{
			{Name: "bundles", Kind: "Bundle", Namespaced: true, Verbs: listVerbs},
			{Name: "tombstones", Kind: "Tombstone", Namespaced: true, Verbs: listVerbs},
		}},
	}}
}

// testClients is a clientFactory of fakes; -n is honoured.
type testClients struct {
	flags     *genericclioptions.ConfigFlags
	client    client.Client
	metadata  metadata.Interface
	discovery resourceDiscovery
	mapper    meta.RESTMapper
}

func (f *testClients) Namespace() (string, error) {
	if f.flags != nil && f.flags.Namespace != nil && *f.flags.Namespace != "" {
		return *f.flags.Namespace, nil
	}
	return "default", nil
}
func (f *testClients) Client() (client.Client, error)        { return f.client, nil }
func (f *testClients) Metadata() (metadata.Interface, error) { return f.metadata, nil }
func (f *testClients) Discovery() (resourceDiscovery, error) { return f.discovery, nil }
func (f *testClients) RESTMapper() (meta.RESTMapper, error)  { return f.mapper, nil }

// fixture holds fake clients over the same objects.
type fixture struct {
	clients  *testClients
	client   client.Client
	metadata *metadatafake.FakeMetadataClient
}

// newFixture returns fake clients that hold objs: the controller-runtime client
// holds them as they are, the metadata client their metadata.
func newFixture(t *testing.T, funcs *interceptor.Funcs, objs ...client.Object) *fixture {
	t.Helper()
	builder := fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(testMapper()).WithObjects(objs...)
	if funcs != nil {
		builder = builder.WithInterceptorFuncs(*funcs)
	}
	c := builder.Build()

	metaScheme := runtime.NewScheme()
	metav1.AddMetaToScheme(metaScheme)
	var partials []runtime.Object
	for _, obj := range objs {
		gvk, err := c.GroupVersionKindFor(obj)
		if err != nil {
			t.Fatal(err)
		}
		p := &metav1.PartialObjectMetadata{}
		p.ObjectMeta = *obj.(metav1.ObjectMetaAccessor).GetObjectMeta().(*metav1.ObjectMeta).DeepCopy()
		p.SetGroupVersionKind(gvk)
		partials = append(partials, p)
	}
	m := metadatafake.NewSimpleMetadataClient(metaScheme, partials...)
	return &fixture{
		clients:  &testClients{client: c, metadata: m, discovery: defaultDiscovery(), mapper: testMapper()},
		client:   c,
		metadata: m,
	}
}

// run runs the plugin with args against the fixture at testNow and returns its
// exit code, stdout and stderr.
func (f *fixture) run(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}
	newClients := func(flags *genericclioptions.ConfigFlags) clientFactory {
		clients := *f.clients
		clients.flags = flags
		return &clients
	}
	code := run(context.Background(), args, streams, newClients, func() time.Time { return testNow })
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
	return m
}
