package plugin_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/reference"
)

// ResolveSpec gives the plugin the spec a Bundle's author meant: references
// substituted, and an escaped marker written as its text whether or not the
// resource has references (the spec of one without used to be passed on raw,
// "!!{x}" and all).
func TestResolveSpec(t *testing.T) {
	db := map[string]reference.Source{"db": {Object: map[string]any{"data": map[string]any{"host": "db.local"}}}}
	hostRef := []limbov1alpha1.Reference{{Name: "host", Resource: "db", Path: "data.host"}}
	for _, tc := range []struct {
		name string
		res  limbov1alpha1.Resource
		want string
	}{
		{name: "no plugin spec is an empty object", res: limbov1alpha1.Resource{Plugin: &limbov1alpha1.PluginResource{Name: "gc"}}, want: `{}`},
		{name: "no references", res: pluginResource(`{"a":"x","b":1}`, nil), want: `{"a":"x","b":1}`},
		{name: "integers keep their precision", res: pluginResource(`{"n":9007199254740993}`, nil), want: `{"n":9007199254740993}`},
		{name: "an escape without references is text", res: pluginResource(`{"page":"p !!{html}"}`, nil), want: `{"page":"p !{html}"}`},
		{name: "a reference is substituted", res: pluginResource(`{"url":"http://!{host}/"}`, hostRef), want: `{"url":"http://db.local/"}`},
		{name: "an escape beside a reference is text", res: pluginResource(`{"url":"!!{host} !{host}"}`, hostRef), want: `{"url":"!{host} db.local"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := plugin.ResolveSpec(tc.res, db)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("ResolveSpec = %s, want %s", got, tc.want)
			}
		})
	}
}

// A plugin spec is bounded as an object is: a value used by many markers is
// refused (reference.ErrTooLarge) before the spec is built and marshalled.
func TestResolveSpecBound(t *testing.T) {
	big := map[string]reference.Source{"db": {Object: map[string]any{"data": map[string]any{"v": strings.Repeat("x", 1<<20)}}}}
	ref := []limbov1alpha1.Reference{{Name: "v", Resource: "db", Path: "data.v"}}
	got, err := plugin.ResolveSpec(pluginResource(`{"urls":["!{v}","!{v}","!{v}","!{v}"]}`, ref), big)
	if !errors.Is(err, reference.ErrTooLarge) || got != nil {
		t.Fatalf("ResolveSpec = %d bytes, %v; want reference.ErrTooLarge", len(got), err)
	}
	const want = `spec.urls[2]: !{v} (1048578 bytes, after 2097156 bytes of values substituted before it): the values substituted into one object are limited to 3 MiB (3145728 bytes)`
	if err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}

func pluginResource(spec string, refs []limbov1alpha1.Reference) limbov1alpha1.Resource {
	return limbov1alpha1.Resource{Name: "r", References: refs,
		Plugin: &limbov1alpha1.PluginResource{Name: "gc", Spec: &apiextensionsv1.JSON{Raw: []byte(spec)}}}
}

// Outside a pass, a reference reads the object the Bundle's status records for
// its resource only when the Bundle controls it: the status also records an
// object its resource could not take (NotOwned, Forbidden), which the Bundle's
// author may not be allowed to read, and limbo reads as itself.
func TestResolveSpecFromStatus(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "b-uid"}}
	config := func(name string, controller types.UID) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}, Data: map[string]string{"host": name + ".local"}}
		if controller != "" {
			cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "limbo.dev/v1alpha1", Kind: "Bundle", Name: "web", UID: controller, Controller: ptr.To(true)}}
		}
		return cm
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	c := fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(mapper).WithObjects(config("ours", "b-uid"), config("unowned", ""), config("others", "other-uid")).Build()
	for _, tc := range []struct {
		object, want, wantErr string
	}{
		{object: "ours", want: `{"url":"http://ours.local/"}`},
		{object: "unowned", wantErr: `resource "db": ConfigMap "unowned" is not the Bundle's (it does not control it): its values are not read`},
		{object: "others", wantErr: `resource "db": ConfigMap "others" is not the Bundle's (it does not control it): its values are not read`},
	} {
		t.Run(tc.object, func(t *testing.T) {
			res := pluginResource(`{"url":"http://!{host}/"}`, []limbov1alpha1.Reference{{Name: "host", Resource: "db", Path: "data.host"}})
			b := b.DeepCopy()
			b.Spec.Resources = []limbov1alpha1.Resource{res}
			b.Status.Resources = []limbov1alpha1.ResourceStatus{{Name: "db", State: limbov1alpha1.ResourceError, Reason: limbov1alpha1.ReasonNotOwned,
				Object: &limbov1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: tc.object}}}
			got, err := plugin.ResolveSpecFromStatus(context.Background(), c, b, res.Name)
			switch {
			case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
				t.Fatalf("ResolveSpecFromStatus = %s, %v; want the error %q", got, err, tc.wantErr)
			case tc.wantErr == "" && (err != nil || string(got) != tc.want):
				t.Fatalf("ResolveSpecFromStatus = %s, %v; want %s", got, err, tc.want)
			}
		})
	}
}

// getRecorder is a client that records the keys of its Gets.
type getRecorder struct {
	client.Client
	keys []string
}

func (g *getRecorder) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	g.keys = append(g.keys, obj.GetObjectKind().GroupVersionKind().Kind+" "+key.String())
	return g.Client.Get(ctx, key, obj, opts...)
}

// The status is not the Bundle's own to trust: a platform that lets tenants
// write bundles/status would otherwise get them limbo's reads (not made as the
// Bundle's ServiceAccount) of any object of the cluster, whose existence the
// error tells. A source is read in the Bundle's namespace, whatever the status
// says, and a cluster-scoped kind (no template nor generated object has one)
// is not read at all.
func TestResolveSpecFromStatusReadsOnlyTheBundlesNamespace(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	owned := []metav1.OwnerReference{{APIVersion: "limbo.dev/v1alpha1", Kind: "Bundle", Name: "web", UID: "b-uid", Controller: ptr.To(true)}}
	objects := []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db", OwnerReferences: owned}, Data: map[string]string{"host": "shop.local"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "db", OwnerReferences: owned}, Data: map[string]string{"host": "kube-system.local"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", OwnerReferences: owned}},
	}
	for _, tc := range []struct {
		name, kind, namespace, objName, want, wantErr string
		wantKeys                                      []string
	}{
		{name: "other namespace", kind: "ConfigMap", namespace: "kube-system", objName: "db", want: `{"url":"http://shop.local/"}`, wantKeys: []string{"ConfigMap shop/db"}},
		{name: "no namespace", kind: "ConfigMap", objName: "db", want: `{"url":"http://shop.local/"}`, wantKeys: []string{"ConfigMap shop/db"}},
		{name: "cluster-scoped", kind: "Node", objName: "n1",
			wantErr: `resource "db": Node "n1" is cluster-scoped, not in the Bundle's namespace: its values are not read`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mapper := meta.NewDefaultRESTMapper(nil)
			mapper.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
			mapper.Add(corev1.SchemeGroupVersion.WithKind("Node"), meta.RESTScopeRoot)
			c := &getRecorder{Client: fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(mapper).WithObjects(objects...).Build()}
			res := pluginResource(`{"url":"http://!{host}/"}`, []limbov1alpha1.Reference{{Name: "host", Resource: "db", Path: "data.host"}})
			b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "b-uid"}}
			b.Spec.Resources = []limbov1alpha1.Resource{res}
			b.Status.Resources = []limbov1alpha1.ResourceStatus{{Name: "db", State: limbov1alpha1.ResourceReady,
				Object: &limbov1alpha1.ObjectReference{APIVersion: "v1", Kind: tc.kind, Namespace: tc.namespace, Name: tc.objName}}}
			got, err := plugin.ResolveSpecFromStatus(context.Background(), c, b, res.Name)
			switch {
			case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
				t.Fatalf("ResolveSpecFromStatus = %s, %v; want the error %q", got, err, tc.wantErr)
			case tc.wantErr == "" && (err != nil || string(got) != tc.want):
				t.Fatalf("ResolveSpecFromStatus = %s, %v; want %s", got, err, tc.want)
			}
			if !slices.Equal(c.keys, tc.wantKeys) {
				t.Errorf("reads %q, want %q", c.keys, tc.wantKeys)
			}
		})
	}
}

// getOnly is a reader that cannot tell a kind's scope.
type getOnly struct{ client.Reader }

// A reader that cannot tell whether the status's kind is namespaced reads
// nothing (fail closed: a cluster-scoped kind's Get ignores the namespace).
func TestResolveSpecFromStatusNeedsTheScope(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := &getRecorder{Client: fake.NewClientBuilder().WithScheme(scheme).Build()}
	res := pluginResource(`{"url":"http://!{host}/"}`, []limbov1alpha1.Reference{{Name: "host", Resource: "db", Path: "data.host"}})
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "b-uid"}}
	b.Spec.Resources = []limbov1alpha1.Resource{res}
	b.Status.Resources = []limbov1alpha1.ResourceStatus{{Name: "db", State: limbov1alpha1.ResourceReady,
		Object: &limbov1alpha1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: "n1"}}}
	if _, err := plugin.ResolveSpecFromStatus(context.Background(), getOnly{c}, b, res.Name); err == nil || !strings.Contains(err.Error(), "cannot tell whether Node is namespaced") {
		t.Errorf("err = %v, want the scope refusal", err)
	}
	if len(c.keys) != 0 {
		t.Errorf("read %v, want nothing", c.keys)
	}
}
