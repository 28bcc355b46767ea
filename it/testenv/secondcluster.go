package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/pkg/controller"
	"github.com/limbo-dev/limbo/pkg/localcluster"
	"github.com/limbo-dev/limbo/pkg/remotecluster"
)

// WorkloadKubeconfigSecret is the name of the kubeconfig Secret SecondCluster
// creates, the name `limbo dev --clusters 2` uses too.
const WorkloadKubeconfigSecret = "workload-kubeconfig"

// secondClusterStartTimeout is generous: a second control plane starts on a machine
// already busy with the first one and the tests.
const secondClusterStartTimeout = 5 * time.Minute

// RemoteCluster is a second control plane, standing for a workload cluster that
// plugins reach through a kubeconfig Secret.
type RemoteCluster struct {
	Cluster *localcluster.Cluster
	// Client talks to the second cluster directly, for a test's setup and checks.
	Client client.Client
	// Secret holds the second cluster's kubeconfig under remotecluster.DefaultKey,
	// in the namespace given to SecondCluster.
	Secret *corev1.Secret
}

// secondCluster is started by the first SecondCluster call and stopped with the
// environment.
type secondCluster struct {
	once    sync.Once
	cluster *localcluster.Cluster
	client  client.Client
	err     error
}

// SecondCluster returns the package's second control plane, started at the first
// call (the tests that do not need it do not pay for it) and stopped when the
// package's tests end, and creates a Secret named WorkloadKubeconfigSecret in
// namespace holding its kubeconfig. The Secret goes with the namespace.
func (e *Env) SecondCluster(t testing.TB, namespace string) *RemoteCluster {
	t.Helper()
	e.second.once.Do(func() {
		ctx := context.Background()
		e.second.cluster, e.second.err = localcluster.Start(ctx, localcluster.Config{
			BinDir:       filepath.Join(e.RepoRoot, "bin"),
			StartTimeout: secondClusterStartTimeout,
			Controllers:  localcluster.WorkloadControllers,
		})
		if e.second.err != nil {
			return
		}
		e.second.client, e.second.err = client.New(e.second.cluster.RESTConfig(), client.Options{Scheme: controller.NewScheme()})
	})
	if e.second.err != nil {
		t.Fatalf("second control plane: %v", e.second.err)
	}
	kubeconfig, err := os.ReadFile(e.second.cluster.KubeconfigPath)
	if err != nil {
		t.Fatalf("second control plane's kubeconfig: %v", err)
	}
	secret := remotecluster.NewKubeconfigSecret(namespace, WorkloadKubeconfigSecret, kubeconfig)
	if err := e.Client.Create(Context(t, time.Minute), secret); err != nil {
		t.Fatalf("create the kubeconfig Secret: %v", err)
	}
	return &RemoteCluster{Cluster: e.second.cluster, Client: e.second.client, Secret: secret}
}

// stopSecondCluster stops the second control plane if a test started it.
func (e *Env) stopSecondCluster() error {
	if e.second.cluster == nil {
		return nil
	}
	if err := e.second.cluster.Stop(); err != nil {
		return fmt.Errorf("second control plane: %w", err)
	}
	return nil
}
