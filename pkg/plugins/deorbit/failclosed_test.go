package deorbit

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/limbo-dev/limbo/pkg/remotecluster"
)

// limbo's own kube-system read fails once: that pass fails, and the next, once
// it reads, refuses the target that is limbo's own cluster. Taken as unknown,
// one slow answer of limbo's own API server turned the own-cluster check off
// for good, and a kubeconfig reaching limbo's own cluster was torn down (found
// by mutation testing).
func TestThisClustersReadFailed(t *testing.T) {
	srv := targetServer(t, func(string) int { return 0 })
	base := fakeCluster(t, false, remotecluster.NewKubeconfigSecret("team", "target", kubeconfigOf(srv)),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: targetClusterUID}})
	var failed atomic.Bool
	local := interceptor.NewClient(base, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if key.Name == "kube-system" && !failed.Swap(true) {
				return apierrors.NewServiceUnavailable("etcd is slow")
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	h := newTeardownHarness(t, `{"kubeConfigSecretRef":{"name":"target"},"volumeSnapshots":false}`, local)
	if res, err := h.pass(); err == nil || res.Done {
		t.Fatalf("pass with this cluster's read failed: %+v, %v; want an error", res, err)
	}
	res, err := h.pass()
	var secretErr *remotecluster.Error
	if !errors.As(err, &secretErr) || secretErr.Reason != remotecluster.ReasonThisCluster || res.Done {
		t.Fatalf("next pass: %+v, %v; want the own cluster refused", res, err)
	}
}

// A first pass far ahead (a replica's clock, forged) is taken as now: the
// timeout still ends the deorbit of a target that keeps failing (found by
// mutation testing).
func TestBeganAheadIsClamped(t *testing.T) {
	h := newTeardownHarness(t, `{"timeout":"1h"}`, errReader{errors.New("forbidden")})
	h.state = `{"began":"2100-01-01T00:00:00Z"}`
	if res, err := h.pass(); err == nil || res.Done {
		t.Fatalf("the first pass against a failing target: %+v, %v; want its error, not done", res, err)
	}
	h.now = now.Add(time.Hour)
	if res, _ := h.pass(); !res.Done || !strings.Contains(res.Warning, "timeout 1h0m0s passed") {
		t.Fatalf("an hour after the first pass: %+v; want the give-up", res)
	}
}

// A state discarded mid-teardown restarts the timeout from this pass, not from
// a deletion long past (the first pass was held for days): it gave up at once,
// before handing out any item, and the volumes leaked (found by mutation
// testing).
func TestDiscardedStateRestartsTheTimeout(t *testing.T) {
	h := newTeardownHarness(t, `{"timeout":"24h"}`, boundClaim(t))
	deleted := metav1.NewTime(now.Add(-48 * time.Hour))
	h.bundle.DeletionTimestamp = &deleted
	h.state = `{"began":"` + now.Add(-time.Hour).Format(time.RFC3339) + `","found":{"PVCs":-1}}`
	res, _ := h.pass()
	if res.Done || len(res.Items) == 0 {
		t.Fatalf("pass after a discarded state: done %v, %d items, warning %q; want the claim handed out", res.Done, len(res.Items), res.Warning)
	}
}
