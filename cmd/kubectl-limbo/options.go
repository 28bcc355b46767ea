package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// scheme knows the built-in kinds and limbo's.
var scheme = newScheme()

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(limbov1alpha1.AddToScheme(s))
	return s
}

// options is what every command shares: the streams, the clients and the clock.
type options struct {
	genericiooptions.IOStreams
	clients clientFactory
	now     func() time.Time
}

// clientFactory builds what the commands talk to. kubeconfigFactory is the
// real one; tests pass fakes.
type clientFactory interface {
	// Namespace is the namespace of -n/--namespace, or else of the kubeconfig
	// context, or else "default".
	Namespace() (string, error)
	// Client reads and patches objects of any kind (typed, unstructured or
	// metav1.PartialObjectMetadata).
	Client() (client.Client, error)
	// Metadata lists objects of any kind, metadata only.
	Metadata() (metadata.Interface, error)
	// Discovery tells which resource types the server has.
	Discovery() (resourceDiscovery, error)
	// RESTMapper resolves KIND arguments as kubectl does (short names included).
	RESTMapper() (meta.RESTMapper, error)
}

// resourceDiscovery is the part of the discovery client that `pending` needs.
type resourceDiscovery interface {
	ServerPreferredNamespacedResourcesWithContext(ctx context.Context) ([]*metav1.APIResourceList, error)
}

// kubeconfigFactory builds the clients from the kubectl flags.
type kubeconfigFactory struct {
	flags *genericclioptions.ConfigFlags
}

func newKubeconfigFactory(flags *genericclioptions.ConfigFlags) clientFactory {
	return &kubeconfigFactory{flags: flags}
}

func (f *kubeconfigFactory) Namespace() (string, error) {
	ns, _, err := f.flags.ToRawKubeConfigLoader().Namespace()
	return ns, err
}

// restConfig is the kubeconfig's rest.Config with a rate limit that suits
// listing every resource type at once.
func (f *kubeconfigFactory) restConfig() (*rest.Config, error) {
	cfg, err := f.flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 50, 100
	return cfg, nil
}

func (f *kubeconfigFactory) Client() (client.Client, error) {
	cfg, err := f.restConfig()
	if err != nil {
		return nil, err
	}
	mapper, err := f.flags.ToRESTMapper()
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme, Mapper: mapper})
}

func (f *kubeconfigFactory) Metadata() (metadata.Interface, error) {
	cfg, err := f.restConfig()
	if err != nil {
		return nil, err
	}
	// `pending` lists every resource type; the deprecation warnings of the
	// old ones (v1 Endpoints, ...) are noise there.
	cfg.WarningHandler = rest.NoWarnings{}
	return metadata.NewForConfig(cfg)
}

func (f *kubeconfigFactory) Discovery() (resourceDiscovery, error) {
	d, err := f.flags.ToDiscoveryClient()
	if err != nil {
		return nil, err
	}
	// A resource type installed since the cache was written must not be
	// missed: what is in limbo has to be complete.
	d.Invalidate()
	return freshDiscovery{d}, nil
}

func (f *kubeconfigFactory) RESTMapper() (meta.RESTMapper, error) {
	return f.flags.ToRESTMapper()
}

// freshDiscovery adapts a discovery client without context support.
type freshDiscovery struct {
	d interface {
		ServerPreferredNamespacedResources() ([]*metav1.APIResourceList, error)
	}
}

func (f freshDiscovery) ServerPreferredNamespacedResourcesWithContext(ctx context.Context) ([]*metav1.APIResourceList, error) {
	if d, ok := f.d.(resourceDiscovery); ok {
		return d.ServerPreferredNamespacedResourcesWithContext(ctx)
	}
	return f.d.ServerPreferredNamespacedResources()
}

// target is an object named on the command line, resolved like kubectl does.
type target struct {
	mapping   *meta.RESTMapping
	namespace string
	name      string
}

// String is the object as kubectl prints it: configmap/x, deployment.apps/x.
func (t target) String() string {
	return objectRef(t.mapping.GroupVersionKind.GroupKind(), t.name)
}

func (t target) key() client.ObjectKey {
	return client.ObjectKey{Namespace: t.namespace, Name: t.name}
}

// objectRef formats an object as kubectl does: kind[.group]/name, lower case.
func objectRef(gk schema.GroupKind, name string) string {
	kind := strings.ToLower(gk.Kind)
	if gk.Group != "" {
		kind += "." + gk.Group
	}
	return kind + "/" + name
}

// parseTarget reads KIND/NAME (or KIND NAME) from args.
func parseTarget(args []string) (kind, name string, err error) {
	switch len(args) {
	case 1:
		kind, name, ok := strings.Cut(args[0], "/")
		if !ok || kind == "" || name == "" || strings.Contains(name, "/") {
			return "", "", fmt.Errorf("expected KIND/NAME (for example configmap/db-config), got %q", args[0])
		}
		return kind, name, nil
	case 2:
		if args[0] == "" || args[1] == "" || strings.Contains(args[0], "/") || strings.Contains(args[1], "/") {
			return "", "", fmt.Errorf("expected KIND/NAME or KIND NAME, got %q", strings.Join(args, " "))
		}
		return args[0], args[1], nil
	default:
		return "", "", fmt.Errorf("expected exactly one object, as KIND/NAME (for example configmap/db-config)")
	}
}

// resolveTarget resolves KIND/NAME with the RESTMapper, as kubectl does: KIND is
// a resource (configmaps, configmap, cm, deployments.apps,
// deployments.v1.apps) or a kind (ConfigMap, Deployment.apps). namespace is
// used for namespaced kinds.
func resolveTarget(mapper meta.RESTMapper, args []string, namespace string) (target, error) {
	kind, name, err := parseTarget(args)
	if err != nil {
		return target{}, err
	}
	mapping, err := mappingFor(mapper, kind)
	if err != nil {
		return target{}, err
	}
	t := target{mapping: mapping, name: name}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		t.namespace = namespace
	}
	return t, nil
}

// mappingFor is the lookup of kubectl's resource builder (mappingFor in
// k8s.io/cli-runtime/pkg/resource): first as a resource, then as a kind.
func mappingFor(mapper meta.RESTMapper, arg string) (*meta.RESTMapping, error) {
	fullySpecifiedGVR, groupResource := schema.ParseResourceArg(arg)
	gvk := schema.GroupVersionKind{}
	if fullySpecifiedGVR != nil {
		gvk, _ = mapper.KindFor(*fullySpecifiedGVR)
	}
	if gvk.Empty() {
		gvk, _ = mapper.KindFor(groupResource.WithVersion(""))
	}
	if !gvk.Empty() {
		return mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}

	fullySpecifiedGVK, groupKind := schema.ParseKindArg(arg)
	if fullySpecifiedGVK == nil {
		gvk := groupKind.WithVersion("")
		fullySpecifiedGVK = &gvk
	}
	if !fullySpecifiedGVK.Empty() {
		if mapping, err := mapper.RESTMapping(fullySpecifiedGVK.GroupKind(), fullySpecifiedGVK.Version); err == nil {
			return mapping, nil
		}
	}
	mapping, err := mapper.RESTMapping(groupKind, gvk.Version)
	if err != nil {
		if meta.IsNoMatchError(err) {
			return nil, fmt.Errorf("the server doesn't have a resource type %q", groupResource.Resource)
		}
		return nil, err
	}
	return mapping, nil
}

// getMetadata reads the metadata of t.
func getMetadata(ctx context.Context, c client.Client, t target) (*metav1.PartialObjectMetadata, error) {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(t.mapping.GroupVersionKind)
	if err := c.Get(ctx, t.key(), obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// isTombstone tells whether gk is limbo's Tombstone.
func isTombstone(gk schema.GroupKind) bool {
	return gk == limbov1alpha1.TombstoneGVK.GroupKind()
}
