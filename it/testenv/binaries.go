package testenv

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// prebuilt are the commands (./cmd/<name>) that tests run as processes: limbo as
// a controller process, kubectl-limbo as kubectl's plugin.
var prebuilt = []string{"limbo", "kubectl-limbo"}

// binaries are the commands built for this test package, each once, each into a
// directory of its own (a test may put files beside it, as kubectl's plugin
// completion needs).
var binaries struct {
	mu     sync.Mutex
	dir    string
	builds map[string]*build
}

type build struct {
	done chan struct{}
	path string
	err  error
}

// startBuild starts building ./cmd/<name> in the background, unless it has been
// started already, and returns the build.
func startBuild(root, name string) *build {
	binaries.mu.Lock()
	defer binaries.mu.Unlock()
	if b, ok := binaries.builds[name]; ok {
		return b
	}
	if binaries.builds == nil {
		binaries.builds = map[string]*build{}
	}
	b := &build{done: make(chan struct{})}
	binaries.builds[name] = b
	if binaries.dir == "" {
		if binaries.dir, b.err = os.MkdirTemp("", "limbo-it-bin-"); b.err != nil {
			binaries.dir = ""
			close(b.done)
			return b
		}
	}
	dir := filepath.Join(binaries.dir, name)
	go func() {
		defer close(b.done)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		path := filepath.Join(dir, name)
		cmd := exec.CommandContext(ctx, "go", "build", "-o", path, "./cmd/"+name)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build ./cmd/%s: %w\n%s", name, err, out)
			return
		}
		b.path = path
	}()
	return b
}

// prebuild starts the builds of prebuilt when the whole package runs (no -run
// filter): they take a minute on a busy machine, and overlap so with the control
// plane's start and the first tests instead of holding up the tests that need
// them. A filtered run builds only what its tests ask for.
func prebuild(root string) {
	if !flag.Parsed() {
		flag.Parse() // testing's flags, parsed early: m.Run would parse them anyway
	}
	if run := flag.Lookup("test.run"); run != nil && run.Value.String() != "" {
		return
	}
	for _, name := range prebuilt {
		startBuild(root, name)
	}
}

// removeBinaries deletes the built commands.
func removeBinaries() {
	binaries.mu.Lock()
	defer binaries.mu.Unlock()
	for _, b := range binaries.builds {
		<-b.done // a build still running would write into the directory
	}
	if binaries.dir != "" {
		_ = os.RemoveAll(binaries.dir)
	}
}

// Binary returns the path of ./cmd/<name> built for this test package, building it
// (or waiting for the build that prebuild started).
func (e *Env) Binary(t testing.TB, name string) string {
	t.Helper()
	b := startBuild(e.RepoRoot, name)
	<-b.done
	if b.err != nil {
		t.Fatalf("build %s: %v", name, b.err)
	}
	return b.path
}
