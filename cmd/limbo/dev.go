package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/limbo-dev/limbo/pkg/controller"
	"github.com/limbo-dev/limbo/pkg/localcluster"
	"github.com/limbo-dev/limbo/pkg/openstack/openstacksim"
	"github.com/limbo-dev/limbo/pkg/storageos/storageossim"
)

// Credentials of the StorageOS simulator that `limbo dev --simulators` starts
// (examples/namespace-gc/secret.yaml holds them).
const (
	simStorageOSUsername = "storageos"
	simStorageOSPassword = "storageos"
)

func newDevCommand() *cobra.Command {
	opts := controller.DefaultOptions()
	opts.MetricsAddr = "127.0.0.1:8080"
	opts.ProbeAddr = "127.0.0.1:8081"
	// One in-process controller on a private control plane: nothing to elect.
	opts.LeaderElect = false
	var (
		dataDir, binDir, crdDir string
		runController           bool
		simulators              bool
		clusters                int
		storageOSSimAddr        string
		openStackSimAddr        string
	)
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Start a local control plane (etcd, kube-apiserver, kube-controller-manager) with limbo's CRDs and the controller",
		Long: `dev starts a real local control plane built from pinned Go modules (see
make cluster-bins), installs limbo's CRDs, runs the controller in-process and prints
the kubeconfig to use. It runs until Ctrl-C, and then stops everything it started.

With --simulators it also starts simulators of the external APIs that plugins talk
to, the same ones the integration tests use, so that the plugin examples work
locally: a StorageOS v2 API (namespace-gc) on --storageos-sim-addr, with the
credentials storageos/storageos (see examples/namespace-gc), and OpenStack
(Keystone v3, Neutron, Nova; route-gc) on --openstack-sim-addr, holding a demo
router and servers (see examples/route-gc). It also installs csi-baremetal's CRDs
(node-removal; see examples/node-removal), found beside the --crds directory, before
the controller starts.

With --clusters 2 it also starts a second control plane, standing for a workload
cluster, and writes its kubeconfig into the Secret default/workload-kubeconfig (key
value) of the first, for plugins that act on another cluster (kubeConfigSecretRef).`,
		Args: cobra.NoArgs,
	}
	setupLogging := loggingFlags(cmd, true)
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "Keep the cluster's state here across restarts; empty uses a temporary directory removed on exit.")
	cmd.Flags().StringVar(&binDir, "bin-dir", "", "Directory of etcd, kube-apiserver and kube-controller-manager; empty uses $LIMBO_BIN_DIR, else the nearest bin/ above the working directory that holds kube-apiserver.")
	cmd.Flags().StringVar(&crdDir, "crds", "crds", "Directory of the CRDs to install (with the admission policy that comes with them).")
	cmd.Flags().BoolVar(&runController, "controller", true, "Run the limbo controller in-process; --controller=false starts only the control plane.")
	cmd.Flags().BoolVar(&simulators, "simulators", false, "Also start simulators of the external APIs the plugins use (StorageOS, OpenStack), for the plugin examples.")
	cmd.Flags().StringVar(&storageOSSimAddr, "storageos-sim-addr", "127.0.0.1:5705", "Listen address of the StorageOS simulator started by --simulators; port 0 picks a free port.")
	cmd.Flags().IntVar(&clusters, "clusters", 1, "Control planes to start: 2 adds a workload cluster whose kubeconfig is in Secret default/workload-kubeconfig.")
	cmd.Flags().StringVar(&openStackSimAddr, "openstack-sim-addr", "127.0.0.1:5000", "Listen address of the OpenStack simulator started by --simulators; port 0 picks a free port.")
	opts.BindFlags(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		setupLogging()
		if clusters != 1 && clusters != 2 {
			return fmt.Errorf("--clusters is 1 or 2, not %d", clusters)
		}
		if binDir == "" {
			// Looked up before anything starts, and the error names the flag:
			// localcluster's "etcd not found in <wd>/bin" named a directory that
			// nobody chose and need not exist.
			dir, err := localcluster.FindBinDir()
			if err != nil {
				return fmt.Errorf("%w: pass --bin-dir <directory of %s, %s and %s>, "+
					"or run limbo dev inside limbo's repository once `make cluster-bins` has put them into its bin/",
					err, localcluster.EtcdBinary, localcluster.APIServerBinary, localcluster.ControllerManagerBinary)
			}
			binDir = dir
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()

		if simulators {
			// Started first: a busy port fails before the control plane starts.
			sim := storageossim.New(storageossim.Config{Username: simStorageOSUsername, Password: simStorageOSPassword})
			url, stopSim, err := sim.Start(storageOSSimAddr)
			if err != nil {
				return fmt.Errorf("StorageOS simulator: %w (choose another address with --storageos-sim-addr)", err)
			}
			defer func() {
				fmt.Fprintln(os.Stderr, "limbo dev: stopping the StorageOS simulator ...")
				if err := stopSim(); err != nil {
					fmt.Fprintln(os.Stderr, "limbo dev: StorageOS simulator:", err)
				}
			}()
			fmt.Printf("limbo dev: StorageOS simulator at %s (username %s, password %s); see examples/namespace-gc\n", url, simStorageOSUsername, simStorageOSPassword)

			stopOpenStack, err := startOpenStackSim(openStackSimAddr)
			if err != nil {
				return err
			}
			defer stopOpenStack()
		}

		if _, err := os.Stat(crdDir); err != nil {
			return fmt.Errorf("--crds: %w (run limbo dev in the repository's root, or point --crds at its crds/ directory)", err)
		}
		crdPaths := []string{crdDir}
		if simulators {
			// csi-baremetal stands in the cluster as the simulators do outside it:
			// installed before the controller starts, as on a real cluster.
			if path, err := csiBaremetalCRDsBeside(crdDir); err != nil {
				fmt.Fprintf(os.Stderr, "limbo dev: csi-baremetal's CRDs not installed: %v; examples/node-removal needs them (kubectl apply -f %s from the repository)\n", err, csiBaremetalCRDs)
			} else {
				crdPaths = append(crdPaths, path)
				fmt.Printf("limbo dev: csi-baremetal's CRDs installed (%s); see examples/node-removal\n", path)
			}
		}
		fmt.Fprintln(os.Stderr, "limbo dev: starting etcd, kube-apiserver and kube-controller-manager ...")
		cluster, err := localcluster.Start(ctx, localcluster.Config{BinDir: binDir, DataDir: dataDir, CRDPaths: crdPaths})
		if err != nil {
			return err
		}
		defer stopAndReport("the control plane", cluster.Stop)
		fmt.Printf("limbo dev: control plane ready (state and logs in %s)\n", cluster.DataDir)
		if clusters == 2 {
			workload, err := startWorkloadCluster(ctx, binDir, dataDir, cluster.RESTConfig())
			if err != nil {
				return err
			}
			defer stopAndReport("the workload cluster", workload.Stop)
		}
		fmt.Printf("\n  export KUBECONFIG=%s; kubectl apply -f examples/configmap-chain.yaml\n\n", cluster.KubeconfigPath)
		if !runController || opts.LeaderElect {
			// `limbo controller` (and `limbo dev --leader-elect`) elects a leader
			// through a Lease in limbo-system, as installed by build/deploy.
			if err := ensureNamespace(ctx, cluster.RESTConfig(), opts.LeaderElectionNamespace); err != nil {
				return err
			}
		}
		if !runController {
			fmt.Printf("limbo dev: controller not started; run: limbo controller --kubeconfig %s\n", cluster.KubeconfigPath)
			<-ctx.Done()
			return nil
		}
		fmt.Println("limbo dev: controller running; Ctrl-C stops everything")
		err = controller.Run(ctx, cluster.RESTConfig(), opts)
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		return err
	}
	return cmd
}

// csiBaremetalCRDs are the CRDs of csi-baremetal that node-removal reads, which
// --simulators installs, relative to the repository's root.
const csiBaremetalCRDs = "examples/node-removal/csi-baremetal-crds.yaml"

// csiBaremetalCRDsBeside finds csiBaremetalCRDs in the repository whose crds/
// directory crdDir is: --crds pointing into the repository from elsewhere finds
// them too, not only a limbo dev run in the repository's root.
func csiBaremetalCRDsBeside(crdDir string) (string, error) {
	path := filepath.Join(crdDir, "..", csiBaremetalCRDs)
	if _, err := os.Stat(path); err != nil {
		return "", err
	}
	return path, nil
}

// startOpenStackSim starts the OpenStack simulator with the demo router and
// servers of examples/route-gc, and prints where it is and how to log in.
func startOpenStackSim(addr string) (stop func(), err error) {
	sim := openstacksim.New(openstacksim.Config{})
	sim.LoadDemo()
	url, stopSim, err := sim.Start(addr)
	if err != nil {
		return nil, fmt.Errorf("OpenStack simulator: %w (choose another address with --openstack-sim-addr)", err)
	}
	c := sim.Config()
	fmt.Printf("limbo dev: OpenStack simulator at %s (Keystone %s, application credential %s / %s, or user %s / %s in domain %s, project %s; router %s); see examples/route-gc\n",
		url, openstacksim.AuthURL(url), c.ApplicationCredentialID, c.ApplicationCredentialSecret, c.Username, c.Password, c.UserDomainName, c.ProjectID, openstacksim.DemoRouterID)
	return func() {
		fmt.Fprintln(os.Stderr, "limbo dev: stopping the OpenStack simulator ...")
		if err := stopSim(); err != nil {
			fmt.Fprintln(os.Stderr, "limbo dev: OpenStack simulator:", err)
		}
	}, nil
}

// ensureNamespace creates namespace name unless it exists.
func ensureNamespace(ctx context.Context, cfg *rest.Config, name string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}
