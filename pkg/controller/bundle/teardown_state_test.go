package bundle

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
)

// stateful is a plugin whose teardown hands out the claim "data" and an event
// and moves its state on, as deorbit does.
type stateful struct{}

func (stateful) Describe() plugin.Description { return plugin.Description{Name: "stateful"} }

func (stateful) Plan(context.Context, plugin.Request) (*plugin.Result, error) {
	return &plugin.Result{}, nil
}

func (stateful) Teardown(ctx context.Context, req plugin.Request) (*plugin.TeardownResult, error) {
	claim := &corev1.PersistentVolumeClaim{}
	if err := req.Reader.Get(ctx, client.ObjectKey{Namespace: req.Bundle.Namespace, Name: "data"}, claim); err != nil {
		return nil, err
	}
	return &plugin.TeardownResult{State: req.TeardownState + "+", Message: "deleting",
		Items:  []plugin.ObjectItem{{Object: claim}},
		Events: []plugin.Event{{Type: corev1.EventTypeNormal, Reason: "Stepped", Message: "a step"}}}, nil
}

// A teardown pass whose state cannot be kept on the Bundle is not acted on: its
// items are not handed to the engine, its events not emitted; the next call
// starts again from the state before it. Acted on, a step the state did not
// keep (deorbit's load-balancer wait) was forgotten, and its events came twice.
func TestTeardownStateNotKeptIsNotActedOn(t *testing.T) {
	registry, err := plugin.NewRegistry(stateful{})
	if err != nil {
		t.Fatal(err)
	}
	b := deletedBundle([]limbov1alpha1.Resource{{Name: "step", Plugin: &limbov1alpha1.PluginResource{Name: "stateful"}}}, limbov1alpha1.BundleStatus{})
	claim := &corev1.PersistentVolumeClaim{}
	claim.Namespace, claim.Name, claim.UID = "shop", "data", "claim-uid"
	f := newTeardownFixture(t, b, registry, claim)
	events := make(chan string, 10)
	f.r.Recorder = &record.FakeRecorder{Events: events}
	f.r.Engine.Recorder = f.r.Recorder
	f.r.Client = interceptor.NewClient(f.c.(client.WithWatch), interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*limbov1alpha1.Bundle); ok && patch.Type() == types.MergePatchType {
				return errors.New("etcdserver: request timed out")
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	_, _ = f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)})
	close(events)
	for e := range events {
		if strings.Contains(e, "Stepped") || strings.Contains(e, limbov1alpha1.EventDeletionScheduled) {
			t.Errorf("event %q of a pass whose state was not kept", e)
		}
	}
	var live corev1.PersistentVolumeClaim
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(claim), &live); err != nil {
		t.Fatal(err)
	}
	if _, stamped := live.Annotations[limbov1alpha1.AnnotationDeletionTimestamp]; stamped {
		t.Errorf("the claim was stamped by a pass whose state was not kept: %v", live.Annotations)
	}
}
