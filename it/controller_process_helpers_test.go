package it

import (
	"context"
	"fmt"
	"testing"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/pkg/controllerprocess"
)

// Helpers of the tests that run the controller as processes (leader_election_*,
// shard_*, audit_log_*).

// shardLabel is the label by which the shard tests split Bundles.
const shardLabel = "limbo.dev/shard"

// startShards starts two controller processes for namespace ns that split its
// Bundles as two shards of an install would: "a" (shardLabel=a) and "rest"
// (!shardLabel), without leader election.
func startShards(t *testing.T, ns string) map[string]*controllerprocess.Process {
	t.Helper()
	procs := map[string]*controllerprocess.Process{}
	for name, selector := range map[string]string{"a": shardLabel + "=a", "rest": "!" + shardLabel} {
		procs[name] = env.ControllerProcess(t, "shard-"+name, "--namespaces", ns, "--leader-elect=false", "--watch-label-selector", selector)
	}
	return procs
}

// metricsOf scrapes a controller process's /metrics.
func metricsOf(t testing.TB, p *controllerprocess.Process) controllerprocess.Samples {
	t.Helper()
	m, err := p.Metrics(context.Background())
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	return m
}

// writesOf counts the requests a controller process sent that are not reads:
// what only an acting controller sends.
func writesOf(m controllerprocess.Samples) float64 {
	return m.Sum("rest_client_requests_total", nil) - m.Sum("rest_client_requests_total", map[string]string{"method": "GET"})
}

// isLeader reports whether the process holds the Lease named leaseName.
func isLeader(m controllerprocess.Samples, leaseName string) bool {
	return m.Sum("leader_election_master_status", map[string]string{"name": leaseName}) == 1
}

// waitLeader waits until p holds the Lease named leaseName.
func waitLeader(t testing.TB, p *controllerprocess.Process, leaseName string) {
	t.Helper()
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if !isLeader(metricsOf(t, p), leaseName) {
			return fmt.Errorf("controller is not the leader of %s yet", leaseName)
		}
		return nil
	})
}
