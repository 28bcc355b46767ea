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
	"k8s.io/cli-runtime/pkg/resource"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
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

// clientFactory builds what the commands talk to: kubectl's RESTClientGetter
// (the kubeconfig, discovery and the RESTMapper, which cli-runtime's resource
// builder needs) and a controller-runtime client. kubeconfigFactory is the real
// one; tests pass fakes.
type clientFactory interface {
	genericclioptions.RESTClientGetter
	// Client reads, lists and patches objects of any kind (typed, unstructured
	// or metav1.PartialObjectMetadata).
	Client() (client.Client, error)
}

// kubeconfigFactory builds the clients from the kubectl flags.
type kubeconfigFactory struct {
	*genericclioptions.ConfigFlags
}

func newKubeconfigFactory(flags *genericclioptions.ConfigFlags) clientFactory {
	return kubeconfigFactory{ConfigFlags: flags}
}

// Client is a client with a rate limit that suits listing every resource type
// at once. `pending` lists every resource type; the deprecation warnings of the
// old ones (v1 Endpoints, ...) are noise there, so warnings are dropped.
func (f kubeconfigFactory) Client() (client.Client, error) {
	cfg, err := f.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 50, 100
	cfg.WarningHandler = rest.NoWarnings{}
	mapper, err := f.ToRESTMapper()
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme, Mapper: mapper})
}

// namespace is the namespace of -n/--namespace, or else of the kubeconfig
// context, or else "default", as in kubectl.
func (o *options) namespace() (string, error) {
	ns, _, err := o.clients.ToRawKubeConfigLoader().Namespace()
	return ns, err
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

// resolve resolves the TYPE/NAME (or TYPE NAME) arguments with cli-runtime's
// resource builder, exactly as kubectl resolves them: TYPE is a resource or a
// kind, plural, singular or short name, optionally with its version and group
// (configmap, cm, deployments.apps, deployments.v1.apps, Deployment.apps). The
// object itself is not read here.
func (o *options) resolve(args []string) (target, error) {
	namespace, err := o.namespace()
	if err != nil {
		return target{}, err
	}
	infos, err := resource.NewBuilder(o.clients).
		Unstructured().
		NamespaceParam(namespace).DefaultNamespace().
		ResourceTypeOrNameArgs(false, args...).
		SingleResourceType().
		RequireObject(false).
		Do().
		Infos()
	if err != nil {
		return target{}, err
	}
	if len(infos) != 1 {
		return target{}, fmt.Errorf("expected exactly one object, as TYPE/NAME (for example configmap/db-config), got %d", len(infos))
	}
	info := infos[0]
	return target{mapping: info.Mapping, namespace: info.Namespace, name: info.Name}, nil
}

// resolveWithClient resolves the TYPE/NAME arguments and returns the client.
func (o *options) resolveWithClient(args []string) (target, client.Client, error) {
	t, err := o.resolve(args)
	if err != nil {
		return target{}, nil, err
	}
	c, err := o.clients.Client()
	return t, c, err
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
