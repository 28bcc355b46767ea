package bench

import (
	"context"
	"strconv"

	"github.com/limbo-dev/limbo/pkg/controllerprocess"
)

// startController runs `limbo controller` against kubeconfig as a child process,
// so that its /metrics (heap, RSS, CPU, client requests) describe the controller
// alone, and waits until it is ready. extra are more arguments (a shard's).
func startController(ctx context.Context, bin, kubeconfig, logPath string, cfg Config, extra ...string) (*controllerprocess.Process, error) {
	args := []string{
		"--kube-api-qps", formatQPS(cfg.QPS),
		"--kube-api-burst", strconv.Itoa(cfg.Burst),
		"--workers", strconv.Itoa(cfg.Workers),
		"--leader-elect=false",
		"--zap-log-level", cfg.ControllerLogLevel,
	}
	args = append(append(args, extra...), cfg.ControllerArgs...)
	return controllerprocess.Start(ctx, controllerprocess.Config{Bin: bin, Kubeconfig: kubeconfig, LogPath: logPath, Args: args, Env: cfg.ControllerEnv})
}
