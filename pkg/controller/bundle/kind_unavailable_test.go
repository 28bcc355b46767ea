package bundle

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
)

// discoveryDown is a mapper whose discovery fails for every kind.
type discoveryDown struct{ meta.RESTMapper }

func (discoveryDown) RESTMapping(schema.GroupKind, ...string) (*meta.RESTMapping, error) {
	return nil, errors.New("the API server lists v1 but its resources are not known (an aggregated API whose service is unavailable?)")
}

// A pass whose template's kind could not be looked up (discovery failed) is
// retried with backoff: its error is not terminal. It was a spec error of an
// unknown kind, left until the spec changed or the resync came (30 minutes).
func TestKindUnavailableIsRetried(t *testing.T) {
	registry, err := plugin.NewRegistry(neverReady{})
	if err != nil {
		t.Fatal(err)
	}
	b := livingBundle(cmResource(t, "keep", nil))
	f := newTeardownFixture(t, b, registry)
	f.r.Mapper = discoveryDown{f.r.Mapper}
	_, err = f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)})
	if err == nil || errors.Is(err, reconcile.TerminalError(nil)) {
		t.Errorf("Reconcile = %v, want an error that is retried", err)
	}
	if _, reason := f.resourceState(t, "keep"); reason != limbov1alpha1.ReasonKindUnavailable {
		t.Errorf("resource keep: reason %q, want %s", reason, limbov1alpha1.ReasonKindUnavailable)
	}
}
