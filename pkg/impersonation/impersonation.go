package impersonation

import (
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/utils/lru"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

type contextKey struct{}

// WithServiceAccount returns ctx whose writes through a Client impersonate the
// ServiceAccount name in namespace; an empty name returns ctx unchanged (limbo
// writes as itself).
func WithServiceAccount(ctx context.Context, namespace, name string) context.Context {
	if name == "" {
		return ctx
	}
	return context.WithValue(ctx, contextKey{}, Username(namespace, name))
}

// Username is the user name of the ServiceAccount name in namespace.
func Username(namespace, name string) string {
	return serviceAccountPrefix + namespace + ":" + name
}

const serviceAccountPrefix = "system:serviceaccount:"

// serviceAccountOf is the namespace and name of the ServiceAccount whose user
// name is user (Username), if it is one.
func serviceAccountOf(user string) (namespace, name string, ok bool) {
	rest, ok := strings.CutPrefix(user, serviceAccountPrefix)
	if !ok {
		return "", "", false
	}
	namespace, name, ok = strings.Cut(rest, ":")
	return namespace, name, ok && namespace != "" && name != "" && !strings.Contains(name, ":")
}

// UserFrom returns the user that writes made with ctx impersonate, if any.
func UserFrom(ctx context.Context) (string, bool) {
	user, ok := ctx.Value(contextKey{}).(string)
	return user, ok && user != ""
}

// ServiceAccountOf is the ServiceAccount whose rights the writes of b's
// objects have: b's own, else defaultName (--default-service-account); "" is
// limbo's.
func ServiceAccountOf(b *limbov1alpha1.Bundle, defaultName string) string {
	if b.Spec.ServiceAccountName != "" {
		return b.Spec.ServiceAccountName
	}
	return defaultName
}

// SecretReader returns what reads the Secrets a plugin spec names (credentials,
// kubeconfigs): when c is a Client and ctx has an identity, that identity,
// straight from the API server, so that a tenant's Bundle uses only Secrets
// the tenant may read — limbo reading them as itself would hand a tenant any
// Secret of its namespace, sent to an endpoint the tenant chose. Without an
// identity in ctx, limbos, limbo's own reader. An identity with a client that
// cannot impersonate it is an error: the Secret is not read as limbo.
func SecretReader(ctx context.Context, c client.Client, limbos client.Reader) (client.Reader, error) {
	user, has := UserFrom(ctx)
	if !has {
		return limbos, nil
	}
	ic, ok := c.(*Client)
	if !ok {
		return nil, fmt.Errorf("cannot read Secrets as %s: this client does not impersonate (%T)", user, c)
	}
	return ic.clientAs(user)
}

// Client is limbo's client (reads, and writes without an identity in their
// context) that writes as the identity in the context when there is one.
type Client struct {
	client.Client
	// serviceAccounts reads a ServiceAccount, as limbo and uncached, after a
	// write as it was refused; nil: not read.
	serviceAccounts client.Reader
	config          *rest.Config
	scheme          *runtime.Scheme
	mapper          meta.RESTMapper

	mu      sync.Mutex // makes each writer once
	writers *lru.Cache // username → client.Client
}

// maxWriters bounds the writers kept, the identities used last: a Bundle's author
// names any ServiceAccount name, a new one with every edit if they like, and a
// writer kept for each for good grew limbo's memory without end. One dropped and
// needed again is made again (its connections are shared: client-go pools them
// by TLS configuration, which impersonation does not change).
const maxWriters = 4096

// NewClient wraps base; config (limbo's own) is copied with the impersonated
// user for each identity's writer. serviceAccounts (the manager's API reader: a
// cached Get would start an informer of every ServiceAccount) tells a write
// refused because its ServiceAccount does not exist from one refused by RBAC
// (see explainForbidden); nil leaves refusals as the API server words them.
func NewClient(base client.Client, serviceAccounts client.Reader, config *rest.Config) *Client {
	return &Client{Client: base, serviceAccounts: serviceAccounts, config: config, scheme: base.Scheme(), mapper: base.RESTMapper(), writers: lru.New(maxWriters)}
}

// explainForbidden adds to err, a write's error, that the ServiceAccount the
// write impersonated does not exist, when err is Forbidden and one GET of the
// ServiceAccount (as limbo) says it is not found:
//
//	configmaps "a" is forbidden: User "system:serviceaccount:default:deployr" cannot
//	patch resource "configmaps" ... (ServiceAccount "deployr" does not exist in namespace "default")
//
// The API server words the refusal of a misspelt spec.serviceAccountName exactly as
// that of a real ServiceAccount without the rights. The error stays Forbidden
// (apierrors.IsForbidden, the resource's reason). Any other answer of the GET
// (found, or limbo may not read ServiceAccounts) leaves err as it is.
func (c *Client) explainForbidden(ctx context.Context, err error) error {
	if err == nil || c.serviceAccounts == nil || !apierrors.IsForbidden(err) {
		return err
	}
	user, _ := UserFrom(ctx)
	namespace, name, ok := serviceAccountOf(user)
	if !ok {
		return err
	}
	if getErr := c.serviceAccounts.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &corev1.ServiceAccount{}); !apierrors.IsNotFound(getErr) {
		return err
	}
	return fmt.Errorf("%w (ServiceAccount %q does not exist in namespace %q)", err, name, namespace)
}

// writer returns the client that writes obj (of kind gvk) with ctx.
func (c *Client) writer(ctx context.Context, gvk schema.GroupVersionKind) (client.Client, error) {
	user, ok := UserFrom(ctx)
	if !ok || gvk.Group == limbov1alpha1.GroupVersion.Group {
		return c.Client, nil
	}
	return c.clientAs(user)
}

// clientAs returns the client that impersonates user, made once.
func (c *Client) clientAs(user string) (client.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w, ok := c.writers.Get(user); ok {
		return w.(client.Client), nil
	}
	cfg := rest.CopyConfig(c.config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	w, err := client.New(cfg, client.Options{Scheme: c.scheme, Mapper: c.mapper})
	if err != nil {
		return nil, fmt.Errorf("client impersonating %s: %w", user, err)
	}
	c.writers.Add(user, w)
	return w, nil
}

func (c *Client) writerFor(ctx context.Context, obj runtime.Object) (client.Client, error) {
	if _, ok := UserFrom(ctx); !ok {
		return c.Client, nil // limbo's own write: nothing to look up
	}
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		return nil, err
	}
	return c.writer(ctx, gvk)
}

// Create creates obj as the context's identity.
func (c *Client) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	w, err := c.writerFor(ctx, obj)
	if err != nil {
		return err
	}
	return c.explainForbidden(ctx, w.Create(ctx, obj, opts...))
}

// Update updates obj as the context's identity.
func (c *Client) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	w, err := c.writerFor(ctx, obj)
	if err != nil {
		return err
	}
	return c.explainForbidden(ctx, w.Update(ctx, obj, opts...))
}

// Patch patches obj as the context's identity.
func (c *Client) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	w, err := c.writerFor(ctx, obj)
	if err != nil {
		return err
	}
	return c.explainForbidden(ctx, w.Patch(ctx, obj, patch, opts...))
}

// Delete deletes obj as the context's identity.
func (c *Client) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	w, err := c.writerFor(ctx, obj)
	if err != nil {
		return err
	}
	return c.explainForbidden(ctx, w.Delete(ctx, obj, opts...))
}

// DeleteAllOf deletes objects of obj's kind as the context's identity.
func (c *Client) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	w, err := c.writerFor(ctx, obj)
	if err != nil {
		return err
	}
	return c.explainForbidden(ctx, w.DeleteAllOf(ctx, obj, opts...))
}

// Apply applies obj (server-side) as the context's identity.
func (c *Client) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	w, err := c.writer(ctx, applyGroupVersionKind(obj))
	if err != nil {
		return err
	}
	return c.explainForbidden(ctx, w.Apply(ctx, obj, opts...))
}

// applyGroupVersionKind is the kind an apply configuration names: typed ones
// (client-go's) tell it through pointers, those built from unstructured
// objects through strings.
func applyGroupVersionKind(obj runtime.ApplyConfiguration) schema.GroupVersionKind {
	var apiVersion, kind string
	switch ac := obj.(type) {
	case interface {
		GetAPIVersion() *string
		GetKind() *string
	}:
		apiVersion, kind = ptr.Deref(ac.GetAPIVersion(), ""), ptr.Deref(ac.GetKind(), "")
	case interface {
		GetAPIVersion() string
		GetKind() string
	}:
		apiVersion, kind = ac.GetAPIVersion(), ac.GetKind()
	}
	return schema.FromAPIVersionAndKind(apiVersion, kind)
}
