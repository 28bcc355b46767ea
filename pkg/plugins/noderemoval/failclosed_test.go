package noderemoval

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// The gate's listings that fail are errors, never empty answers: a Node list
// refused (a 429, a timeout) taken for none missed a node back under a name
// never recorded, still carrying its UUID, and a pod list taken for none let a
// node pod still bound to it go unseen — the node's Drives, LVGs and Volumes
// deleted while in use (found by mutation testing).
func TestMayDeleteListErrors(t *testing.T) {
	const spec = `{"nodePodSelector":{"matchLabels":{"app":"csi-baremetal-node"}}}`
	for _, fail := range []string{"nodes", "pods"} {
		t.Run(fail, func(t *testing.T) {
			base := fakeCluster(kubeNode("stays", "10.0.0.100", false))
			c := interceptor.NewClient(base.(client.WithWatch), interceptor.Funcs{
				List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
					switch l.(type) {
					case *corev1.NodeList:
						if fail == "nodes" {
							return apierrors.NewServiceUnavailable("etcd is slow")
						}
					case *corev1.PodList:
						if fail == "pods" {
							return apierrors.NewServiceUnavailable("etcd is slow")
						}
					}
					return c.List(ctx, l, opts...)
				},
			})
			hold, err := New(Options{}).MayDelete(context.Background(), testRequest(c, spec), "w3/w3-uuid")
			if err == nil {
				t.Errorf("MayDelete = %q, nil; want an error", hold)
			}
		})
	}
}

// A Csibmnode with a hostname but no spec.UUID is not judged, even with
// removeUndrained: judged, it went to limbo with every Drive, AvailableCapacity,
// LVG and Volume whose node field is empty (all "of" the UUID "") (found by
// mutation testing).
func TestCsibmnodeWithoutUUIDNotJudged(t *testing.T) {
	noUUID := csibmnodeObj("", "w4", "10.0.0.4", drained, nil)
	noUUID.SetName("no-uuid")
	c := fakeCluster(noUUID, kubeNode("w1", "10.0.0.1", false))
	res := mustPlan(t, c, `{"removeUndrained":true}`)
	for _, it := range res.Inventory.Objects {
		if !it.Desired {
			t.Errorf("%s is an orphan", it.Object.GetName())
		}
	}
	if !strings.Contains(res.Message, "not judged: no-uuid") {
		t.Errorf("message %q", res.Message)
	}
}
