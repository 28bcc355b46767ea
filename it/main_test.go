// Package it holds limbo's integration tests. They run against a real control plane
// (etcd, kube-apiserver and kube-controller-manager built from pinned modules), with
// the controller in-process; one file per behaviour.
package it

import (
	"os"
	"testing"

	"github.com/limbo-dev/limbo/it/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, testenv.Options{}, &env))
}
