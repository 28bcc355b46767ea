package it

import (
	"context"
	"fmt"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/limbo-dev/limbo/pkg/localcluster"
	"github.com/limbo-dev/limbo/pkg/plugins/deorbit"
	"github.com/limbo-dev/limbo/pkg/remotecluster"
)

// A target whose API server refuses connections (a connection error, not an API
// status: the original's shortcut never matched it) makes deorbit give up after
// apiUnavailableTimeout, long before timeout, with DeorbitTimedOut; the teardown
// goes on.
func TestDeorbitUnreachableTarget(t *testing.T) {
	ns := env.Namespace(t)
	w := newWorkload(t, ns)
	kubeconfig, err := os.ReadFile(w.remote.Cluster.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ports, err := localcluster.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.Server = fmt.Sprintf("https://127.0.0.1:%d", ports[0]) // nothing listens there
	}
	dead, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(context.Background(), remotecluster.NewKubeconfigSecret(ns, "dead-kubeconfig", dead)); err != nil {
		t.Fatal(err)
	}
	b := deorbitBundle(t, ns, "0s", map[string]any{"kubeConfigSecretRef": map[string]any{"name": "dead-kubeconfig"}, "apiUnavailableTimeout": "5s", "timeout": "1h"})
	waitEventContaining(t, b, corev1.EventTypeWarning, "PluginFailed", "unreachable")

	deleteBundle(t, b, metav1.DeletePropagationBackground)
	waitEventContaining(t, b, corev1.EventTypeWarning, deorbit.EventDeorbitFailed, "unreachable")
	waitEventContaining(t, b, corev1.EventTypeWarning, deorbit.EventDeorbitTimedOut, "apiUnavailableTimeout 5s", "connection refused")
	waitBundleGone(t, b)
}
