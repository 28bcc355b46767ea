// Package it holds limbo's integration tests. They run against a real control plane
// (etcd, kube-apiserver and kube-controller-manager built from pinned modules), with
// the controller in-process; one file per behaviour.
//
// Tests call t.Parallel() unless they stop or restart the shared in-process
// controller, read its request log or process-wide metrics expecting exact
// numbers, or change what other tests see cluster-wide (node-removal judges
// every Node). A parallel test keeps to its own namespace (env.Namespace), its
// own cluster-scoped names and its own domain of the external test plugin. The
// parallel tests run after all the others, -parallel of them at a time (IT_FLAGS
// in the Makefile).
package it

import (
	"os"
	"testing"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/it/testplugin"
	"github.com/limbo-dev/limbo/pkg/controller"
	"github.com/limbo-dev/limbo/pkg/plugins"
)

var (
	env *testenv.Env
	// external is the test plugin's registry entry: tests drive its items (and
	// those of its twin with a teardown, registered too).
	external = testplugin.New()
)

func TestMain(m *testing.M) {
	opts := controller.DefaultOptions()
	registry, err := plugins.NewRegistry(plugins.Options{NamespaceGCInterval: opts.NamespaceGCInterval, NamespaceGCDelay: opts.NamespaceGCDelay},
		external, testplugin.NewTearingDown(external))
	if err != nil {
		panic(err)
	}
	opts.Plugins = registry
	os.Exit(testenv.Run(m, testenv.Options{Controller: &opts}, &env))
}
