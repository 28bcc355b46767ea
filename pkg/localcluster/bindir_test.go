package localcluster

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// noBinDirAbove skips the test if dir or a directory above it has a bin/ that
// holds kube-apiserver (a shared machine's /tmp/bin, say): the lookup would find it.
func noBinDirAbove(t *testing.T, dir string) {
	t.Helper()
	for {
		if _, err := os.Stat(filepath.Join(dir, "bin", APIServerBinary)); err == nil {
			t.Skipf("%s holds %s: the lookup finds it", filepath.Join(dir, "bin"), APIServerBinary)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return
		}
		dir = parent
	}
}

// FindBinDir takes $LIMBO_BIN_DIR, else the nearest bin/ above the working
// directory that holds kube-apiserver; without either, its error says where it
// looked (not "etcd not found in <wd>/bin", a directory nobody named).
func TestFindBinDir(t *testing.T) {
	root := t.TempDir()
	repo := filepath.Join(root, "repo")
	deep := filepath.Join(repo, "examples", "soft-delete")
	empty := filepath.Join(root, "elsewhere")
	for _, dir := range []string{filepath.Join(repo, "bin"), deep, filepath.Join(empty, "bin")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(repo, "bin", APIServerBinary), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	noBinDirAbove(t, root)
	for _, tc := range []struct {
		name, env, wd string
		want, wantErr string
	}{
		{name: "env wins", env: "/opt/limbo/bin", wd: deep, want: "/opt/limbo/bin"},
		{name: "nearest bin above", wd: deep, want: filepath.Join(repo, "bin")},
		{name: "bin of the working directory", wd: repo, want: filepath.Join(repo, "bin")},
		// A bin/ without kube-apiserver is not taken.
		{name: "none", wd: empty,
			wantErr: "no bin/ holding kube-apiserver in " + empty + " or any directory above it ($LIMBO_BIN_DIR is not set)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("LIMBO_BIN_DIR", tc.env)
			t.Chdir(tc.wd)
			got, err := FindBinDir()
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if got != tc.want || gotErr != tc.wantErr {
				t.Errorf("FindBinDir() = %q, %q; want %q, %q", got, gotErr, tc.want, tc.wantErr)
			}
		})
	}
}

// Start without a BinDir, where there is no bin/ to find, says so and what to do.
func TestStartWithoutBinDir(t *testing.T) {
	wd := t.TempDir()
	noBinDirAbove(t, wd)
	t.Setenv("LIMBO_BIN_DIR", "")
	t.Chdir(wd)
	_, err := Start(context.Background(), Config{})
	want := "no bin/ holding kube-apiserver in " + wd + " or any directory above it ($LIMBO_BIN_DIR is not set): " +
		"set $LIMBO_BIN_DIR to the directory of etcd, kube-apiserver and kube-controller-manager, " +
		"or work inside limbo's repository once `make cluster-bins` has put them into its bin/"
	if err == nil || err.Error() != want {
		t.Errorf("Start error = %v\nwant %s", err, want)
	}
}
