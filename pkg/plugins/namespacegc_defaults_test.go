package plugins_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/plugins"
	"github.com/limbo-dev/limbo/pkg/plugins/namespacegc"
	"github.com/limbo-dev/limbo/pkg/storageos/storageossim"
)

// The controller's --namespace-delete-gc-delay and --namespace-delete-gc-interval
// (Options) are namespace-gc's defaults for a spec that names neither (DESIGN
// §5): its first garbage collection after the delay, the next after the
// interval. The plugin's own tests set its options directly; two values swapped
// in the registry went unnoticed.
func TestNamespaceGCDefaultsFromOptions(t *testing.T) {
	sim := storageossim.New(storageossim.Config{Username: "admin", Password: "s3cret"})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	k8s := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "storageos-api", Namespace: "team"},
			Data: map[string][]byte{"username": []byte("admin"), "password": []byte("s3cret")}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}).Build()
	r, err := plugins.NewRegistry(plugins.Options{NamespaceGCInterval: 2 * time.Hour, NamespaceGCDelay: 7 * time.Second, Metrics: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	p, ok := r.Get(namespacegc.Name)
	if !ok {
		t.Fatal("namespace-gc is not registered")
	}
	spec := []byte(fmt.Sprintf(`{"storageos":{"endpoint":%q,"credentialsSecretRef":{"name":"storageos-api"}}}`, srv.URL))
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "storage", UID: "uid-storage"}}
	start := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	plan := func(now time.Time) time.Duration {
		t.Helper()
		res, err := p.Plan(context.Background(), plugin.Request{Bundle: b, Resource: "gc", Spec: spec, Client: k8s, Reader: k8s, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return res.PollAfter
	}
	if after := plan(start); after != 7*time.Second {
		t.Errorf("the first plan polls after %v, want the delay, 7s", after)
	}
	if after := plan(start.Add(7 * time.Second)); after != 2*time.Hour {
		t.Errorf("after the first garbage collection the plan polls after %v, want the interval, 2h", after)
	}
}
