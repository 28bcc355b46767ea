package main

import (
	"os"
	"path/filepath"
	"testing"
)

// limbo dev run outside the repository without --bin-dir says that it found no
// bin/ above the working directory and how to name one, before it starts anything.
func TestDevWithoutBinDir(t *testing.T) {
	wd := t.TempDir()
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "bin", "kube-apiserver")); err == nil {
			t.Skipf("%s/bin holds kube-apiserver: the lookup finds it", dir)
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	t.Setenv("LIMBO_BIN_DIR", "")
	t.Chdir(wd)
	cmd := newDevCommand()
	cmd.SetArgs([]string{"--controller=false", "--crds", t.TempDir()})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	want := "no bin/ holding kube-apiserver in " + wd + " or any directory above it ($LIMBO_BIN_DIR is not set): " +
		"pass --bin-dir <directory of etcd, kube-apiserver and kube-controller-manager>, " +
		"or run limbo dev inside limbo's repository once `make cluster-bins` has put them into its bin/"
	if err == nil || err.Error() != want {
		t.Errorf("limbo dev error = %v\nwant %s", err, want)
	}
}

// --simulators finds csi-baremetal's CRDs beside the crds/ directory that
// --crds names, wherever limbo dev runs, and reports when there are none there.
func TestCSIBaremetalCRDsBesideTheCRDs(t *testing.T) {
	// The test runs in cmd/limbo: the repository's crds/ is two levels up.
	path, err := csiBaremetalCRDsBeside(filepath.Join("..", "..", "crds"))
	if want := filepath.Join("..", "..", csiBaremetalCRDs); err != nil || path != want {
		t.Errorf("csiBaremetalCRDsBeside(../../crds) = %q, %v; want %q", path, err, want)
	}
	if path, err := csiBaremetalCRDsBeside(filepath.Join(t.TempDir(), "crds")); err == nil {
		t.Errorf("csiBaremetalCRDsBeside(a directory outside the repository) = %q, want an error", path)
	}
}
