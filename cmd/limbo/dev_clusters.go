package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/pkg/localcluster"
	"github.com/limbo-dev/limbo/pkg/remotecluster"
)

// The kubeconfig Secret of the workload cluster that `limbo dev --clusters 2` starts
// (examples that act on another cluster name it in kubeConfigSecretRef).
const (
	workloadSecretNamespace = "default"
	workloadSecretName      = "workload-kubeconfig"
)

// startWorkloadCluster starts a second control plane, standing for a workload
// cluster, and writes its kubeconfig into a Secret of the first (local) cluster. A
// kept data directory keeps the second cluster's state in its cluster-2/.
func startWorkloadCluster(ctx context.Context, binDir, dataDir string, local *rest.Config) (*localcluster.Cluster, error) {
	if dataDir != "" {
		dataDir = filepath.Join(dataDir, "cluster-2")
	}
	fmt.Fprintln(os.Stderr, "limbo dev: starting a second control plane (the workload cluster) ...")
	cluster, err := localcluster.Start(ctx, localcluster.Config{BinDir: binDir, DataDir: dataDir, Controllers: localcluster.WorkloadControllers})
	if err != nil {
		return nil, fmt.Errorf("second control plane: %w", err)
	}
	if err := writeKubeconfigSecret(ctx, cluster.KubeconfigPath, local); err != nil {
		_ = cluster.Stop()
		return nil, err
	}
	fmt.Printf("limbo dev: workload cluster ready (state and logs in %s); for plugins that act on it (deorbit), its kubeconfig is %s and Secret %s/%s (key %s); kubectl uses the first cluster's, below\n",
		cluster.DataDir, cluster.KubeconfigPath, workloadSecretNamespace, workloadSecretName, remotecluster.DefaultKey)
	return cluster, nil
}

// writeKubeconfigSecret creates or replaces the workload kubeconfig Secret: a kept
// data directory restarts the workload cluster on other ports.
func writeKubeconfigSecret(ctx context.Context, kubeconfigPath string, local *rest.Config) error {
	kubeconfig, err := os.ReadFile(kubeconfigPath)
	if err != nil {
		return err
	}
	c, err := client.New(local, client.Options{})
	if err != nil {
		return err
	}
	secret := remotecluster.NewKubeconfigSecret(workloadSecretNamespace, workloadSecretName, kubeconfig)
	err = c.Create(ctx, secret)
	if apierrors.IsAlreadyExists(err) {
		err = c.Update(ctx, secret)
	}
	if err != nil {
		return fmt.Errorf("write Secret %s/%s: %w", workloadSecretNamespace, workloadSecretName, err)
	}
	return nil
}

// stopAndReport stops what limbo dev started, saying so: stopping a control plane
// takes a few seconds.
func stopAndReport(what string, stop func() error) {
	fmt.Fprintf(os.Stderr, "limbo dev: stopping %s ...\n", what)
	if err := stop(); err != nil {
		fmt.Fprintln(os.Stderr, "limbo dev:", err)
	}
}
