package it

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/controller"
	"github.com/limbo-dev/limbo/pkg/remotecluster"
)

// pkg/remotecluster reaches the cluster of a kubeconfig Secret: objects written
// through it land in the second control plane, not in limbo's, with deletes carrying
// UID preconditions; its RESTMapper sees that cluster's kinds; and a kubeconfig
// rotated to garbage or a Secret deleted is an *Error naming the Secret.
// Not parallel: it starts a second control plane, which would starve the
// parallel tests of CPU.
func TestRemoteClusterReadsAndWritesTheOtherCluster(t *testing.T) {
	ns := env.Namespace(t)
	remote := env.SecondCluster(t, ns)
	ctx := testenv.Context(t, 2*time.Minute)
	cache := remotecluster.NewCache(remotecluster.Options{Scheme: controller.NewScheme()})
	ref := remotecluster.SecretRef{Name: remote.Secret.Name}

	clients, err := cache.Clients(ctx, env.Client, ns, ref)
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: ns}, Data: map[string]string{"written": "remotely"}}
	if err := clients.Client.Create(ctx, cm); err != nil {
		t.Fatalf("create in the remote cluster: %v", err)
	}
	var seen corev1.ConfigMap
	if err := remote.Client.Get(ctx, client.ObjectKeyFromObject(cm), &seen); err != nil || seen.Data["written"] != "remotely" {
		t.Fatalf("the second cluster has %v (%v)", seen.Data, err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Fatalf("limbo's own cluster: %v; want NotFound (the write went to the wrong cluster)", err)
	}

	// The remote cluster has none of limbo's CRDs; this one does.
	bundles := schema.GroupKind{Group: limbov1alpha1.GroupVersion.Group, Kind: "Bundle"}
	if _, err := clients.RESTMapper.RESTMapping(bundles); !meta.IsNoMatchError(err) {
		t.Errorf("Bundle mapping in the remote cluster: %v; want no match", err)
	}
	if _, err := clients.RESTMapper.RESTMapping(schema.GroupKind{Kind: "ConfigMap"}, "v1"); err != nil {
		t.Errorf("ConfigMap mapping in the remote cluster: %v", err)
	}

	// An unchanged Secret reuses the clients.
	if again, err := cache.Clients(ctx, env.Client, ns, ref); err != nil || again != clients {
		t.Errorf("unchanged Secret: clients %p (%v), want the cached %p", again, err, clients)
	}

	otherUID := seen.UID + "-other"
	wrongUID := client.Preconditions{UID: &otherUID}
	if err := clients.Client.Delete(ctx, &seen, wrongUID); !apierrors.IsConflict(err) {
		t.Fatalf("delete with a stale UID: %v; want Conflict", err)
	}
	if err := clients.Client.Delete(ctx, &seen, client.Preconditions{UID: &seen.UID}); err != nil {
		t.Fatalf("delete with the UID precondition: %v", err)
	}
	if err := remote.Client.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after the delete, the second cluster has the ConfigMap: %v", err)
	}

	// Rotated to garbage: the new Secret version is parsed, and refused.
	var secret corev1.Secret
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(remote.Secret), &secret); err != nil {
		t.Fatal(err)
	}
	secret.Data[remotecluster.DefaultKey] = []byte("not: [a kubeconfig")
	if err := env.Client.Update(ctx, &secret); err != nil {
		t.Fatal(err)
	}
	assertSecretError(t, cache, ns, ref, remotecluster.ReasonInvalidKubeconfig)

	if err := env.Client.Delete(ctx, &secret); err != nil {
		t.Fatal(err)
	}
	assertSecretError(t, cache, ns, ref, remotecluster.ReasonSecretNotFound)
}

func assertSecretError(t *testing.T, cache *remotecluster.Cache, ns string, ref remotecluster.SecretRef, reason remotecluster.Reason) {
	t.Helper()
	_, err := cache.Clients(testenv.Context(t, time.Minute), env.Client, ns, ref)
	var secretErr *remotecluster.Error
	if !errors.As(err, &secretErr) || secretErr.Reason != reason || secretErr.Secret.Name != ref.Name || secretErr.Secret.Namespace != ns {
		t.Errorf("error %v; want a %s *remotecluster.Error naming %s/%s", err, reason, ns, ref.Name)
	}
}
