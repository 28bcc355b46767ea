package impersonation

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// apiServer answers writes of ConfigMaps like the API server (the object back,
// 201 or 200) and records who each request impersonated.
type apiServer struct {
	mu       sync.Mutex
	requests []string // "METHOD path as Impersonate-User"
}

func (s *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.requests = append(s.requests, r.Method+" "+r.URL.Path+" as "+r.Header.Get("Impersonate-User"))
	s.mu.Unlock()
	cm := map[string]any{}
	_ = json.Unmarshal(body, &cm)
	cm["apiVersion"], cm["kind"] = "v1", "ConfigMap"
	if md, ok := cm["metadata"].(map[string]any); ok {
		md["uid"], md["resourceVersion"] = "u1", "1"
	} else {
		cm["metadata"] = map[string]any{"name": "x", "namespace": "team-a", "uid": "u1", "resourceVersion": "1"}
	}
	w.Header().Set("Content-Type", "application/json")
	if r.Method == http.MethodPost {
		w.WriteHeader(http.StatusCreated)
	}
	_ = json.NewEncoder(w).Encode(cm)
}

func TestClientWritesAsTheContextsIdentity(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, limbov1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	bundle := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team-a"}}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	mapper.Add(limbov1alpha1.BundleGVK, meta.RESTScopeNamespace)
	base := fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(mapper).WithObjects(bundle).Build()
	server := &apiServer{}
	ts := httptest.NewServer(server)
	defer ts.Close()
	c := NewClient(base, nil, &rest.Config{Host: ts.URL})

	tenant := WithServiceAccount(context.Background(), "team-a", "tenant")
	if user, ok := UserFrom(tenant); !ok || user != "system:serviceaccount:team-a:tenant" {
		t.Fatalf("UserFrom = %q, %v", user, ok)
	}
	if _, ok := UserFrom(WithServiceAccount(context.Background(), "team-a", "")); ok {
		t.Fatalf("an empty ServiceAccount name must leave limbo's identity")
	}

	// Without an identity: limbo's client.
	if err := c.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: "team-a"}}); err != nil {
		t.Fatal(err)
	}
	if err := base.Get(context.Background(), client.ObjectKey{Namespace: "team-a", Name: "mine"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("a write without an identity did not go through limbo's client: %v", err)
	}
	// With one: the impersonating client, for typed and applied objects alike.
	if err := c.Create(tenant, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: "team-a"}}); err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "applied", "namespace": "team-a"}}}
	if err := c.Apply(tenant, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("limbo")); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(tenant, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: "team-a"}}); err != nil {
		t.Fatal(err)
	}
	// limbo's own kinds: limbo's client, whatever the context.
	orig := bundle.DeepCopy()
	bundle.Finalizers = []string{limbov1alpha1.FinalizerTeardown}
	if err := c.Patch(tenant, bundle, client.MergeFrom(orig)); err != nil {
		t.Errorf("a Bundle write with an identity: %v (it must go through limbo's client)", err)
	}

	want := []string{
		"POST /api/v1/namespaces/team-a/configmaps as system:serviceaccount:team-a:tenant",
		"PATCH /api/v1/namespaces/team-a/configmaps/applied as system:serviceaccount:team-a:tenant",
		"DELETE /api/v1/namespaces/team-a/configmaps/theirs as system:serviceaccount:team-a:tenant",
	}
	if len(server.requests) != len(want) {
		t.Fatalf("requests %q, want %q", server.requests, want)
	}
	for i := range want {
		if server.requests[i] != want[i] {
			t.Errorf("request %d = %q, want %q", i, server.requests[i], want[i])
		}
	}
	if n := c.writers.Len(); n != 1 {
		t.Errorf("%d cached writers, want 1 per identity", n)
	}
}

// The writers are kept for the identities used last, at most maxWriters: a
// Bundle's author can name a new ServiceAccount with every edit, and each writer
// held for good grew limbo's memory without end.
func TestClientWritersBounded(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	base := fake.NewClientBuilder().WithRESTMapper(mapper).Build()
	c := NewClient(base, nil, &rest.Config{Host: "https://example.invalid"})
	writer := func(i int) client.Client {
		t.Helper()
		w, err := c.clientAs(Username("team-a", fmt.Sprintf("sa-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	first := writer(0)
	if writer(0) != first {
		t.Fatal("an identity's writer was made twice in a row")
	}
	for i := 1; i <= maxWriters; i++ {
		writer(i)
	}
	if writer(maxWriters) == nil || writer(0) == first {
		t.Errorf("the writer of the identity used longest ago is still held after %d others", maxWriters)
	}
}

// Secrets a plugin spec names are read as the Bundle's identity, or by limbo
// when there is none; an identity that the client cannot impersonate fails
// the read rather than reading the Secret as limbo.
func TestSecretReader(t *testing.T) {
	limbos := fake.NewClientBuilder().Build()
	as := WithServiceAccount(context.Background(), "team-a", "deployer")
	if r, err := SecretReader(context.Background(), limbos, limbos); err != nil || r != limbos {
		t.Errorf("without an identity: %v, %v; want limbo's reader", r, err)
	}
	if r, err := SecretReader(as, limbos, limbos); err == nil {
		t.Errorf("an identity and a client that cannot impersonate: reader %T, want an error", r)
	}
	ic := NewClient(limbos, nil, &rest.Config{Host: "https://example.invalid"})
	if r, err := SecretReader(as, ic, limbos); err != nil || r == limbos {
		t.Errorf("an identity and an impersonating client: %T, %v; want a reader as the identity", r, err)
	}
}

// Only a well-formed ServiceAccount username names a ServiceAccount to look
// for: another user, or one with an empty or extra part, is not one (a GET of
// it would find nothing, and the refusal would blame a ServiceAccount "missing").
func TestServiceAccountOfUser(t *testing.T) {
	for _, tc := range []struct {
		user, namespace, name string
		ok                    bool
	}{
		{user: "system:serviceaccount:team-a:deployer", namespace: "team-a", name: "deployer", ok: true},
		{user: "system:serviceaccount::deployer"},
		{user: "system:serviceaccount:team-a:"},
		{user: "system:serviceaccount:team-a:deployer:extra"},
		{user: "system:serviceaccount:team-a"},
		{user: "alice"},
	} {
		namespace, name, ok := serviceAccountOf(tc.user)
		if ok != tc.ok || (ok && (namespace != tc.namespace || name != tc.name)) {
			t.Errorf("serviceAccountOf(%q) = %q, %q, %v; want %q, %q, %v", tc.user, namespace, name, ok, tc.namespace, tc.name, tc.ok)
		}
	}
}

// A Bundle's own ServiceAccount wins over the controller's default.
func TestServiceAccountOfBundle(t *testing.T) {
	named := &limbov1alpha1.Bundle{Spec: limbov1alpha1.BundleSpec{ServiceAccountName: "deployer"}}
	if got := ServiceAccountOf(named, "default-sa"); got != "deployer" {
		t.Errorf("named: %q, want the Bundle's deployer", got)
	}
	if got := ServiceAccountOf(&limbov1alpha1.Bundle{}, "default-sa"); got != "default-sa" {
		t.Errorf("unnamed: %q, want the default", got)
	}
}

// The kind of an apply configuration, typed (client-go's, through pointers) or
// built from an unstructured object: it decides whether a write is limbo's
// own (its group) or impersonated.
func TestApplyGroupVersionKind(t *testing.T) {
	bundle := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "limbo.dev/v1alpha1", "kind": "Bundle", "metadata": map[string]any{"name": "shop", "namespace": "team-a"}}}
	for _, tc := range []struct {
		name string
		obj  runtime.ApplyConfiguration
		want schema.GroupVersionKind
	}{
		{name: "typed", obj: appsv1ac.Deployment("web", "team-a"), want: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}},
		{name: "from unstructured", obj: client.ApplyConfigurationFromUnstructured(bundle), want: limbov1alpha1.BundleGVK},
	} {
		if got := applyGroupVersionKind(tc.obj); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
