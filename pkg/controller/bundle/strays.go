package bundle

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
	"github.com/limbo-dev/limbo/pkg/restmappings"
)

// recordedStrays finds b's strays: objects b controls whose limbo.dev/bundle
// label another writer removed or changed. Every listing of b's objects selects
// by that label, so a stray is found by none — an orphan in limbo dropped from
// pendingDeletions and never deleted; at the teardown, an object the waves
// never saw, and once b's finalizer went, the garbage collector, which goes by
// the owner reference alone, deleted it at once, its delay ignored. The objects
// b's last status records — its resources' objects and its pendingDeletions
// entries, of this cluster and b's namespace — that known does not hold are
// read from the API server, one by one (those a listing showed cost nothing,
// as does a status that records nothing more); the strays among them get their
// labels back (Engine.Relabel) and a Relabelled event, and are returned, as a
// listing would show them now. A failed read or write is returned with the
// strays found: the caller must not let b go on that.
func (r *Reconciler) recordedStrays(ctx context.Context, b *limbov1alpha1.Bundle, known func(key string) bool) ([]*unstructured.Unstructured, error) {
	var strays []*unstructured.Unstructured
	var errs []error
	looked := map[string]bool{}
	look := func(gvk schema.GroupVersionKind, name string) {
		key := bundlespec.ObjectKey(gvk.GroupKind(), name)
		if gvk.Kind == "" || gvk == limbov1alpha1.TombstoneGVK || known(key) || looked[key] {
			return
		}
		looked[key] = true
		gvk = r.servedVersions([]schema.GroupVersionKind{gvk})[0]
		meta := &metav1.PartialObjectMetadata{}
		meta.SetGroupVersionKind(gvk)
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: name}, meta)
		switch {
		case apierrors.IsNotFound(err) || restmappings.NotServed(err):
			return // gone, and its kind with it maybe: nothing left to delete early
		case err != nil:
			errs = append(errs, fmt.Errorf("read %s %s, which the Bundle's status records: %w", gvk.Kind, name, err))
			return
		}
		if !metav1.IsControlledBy(meta, b) || meta.GetLabels()[limbov1alpha1.LabelBundle] == b.Name {
			return
		}
		was := meta.GetLabels()[limbov1alpha1.LabelBundle]
		if err := r.Engine.Relabel(ctx, b, meta); err != nil {
			errs = append(errs, err)
			return
		}
		log.FromContext(ctx).Info("put back the "+limbov1alpha1.LabelBundle+" label of an object the Bundle controls", "object", key, "was", was)
		r.Recorder.Eventf(b, corev1.EventTypeNormal, limbov1alpha1.EventRelabelled,
			"%s %s: put back its %s label (%s), which another writer removed or changed: the Bundle controls it, and finds its objects by it", gvk.Kind, name, limbov1alpha1.LabelBundle, b.Name)
		u, err := asUnstructured(meta, gvk)
		if err != nil {
			errs = append(errs, err)
			return
		}
		strays = append(strays, u)
	}
	for _, st := range b.Status.Resources {
		if o := st.Object; o != nil && (o.Namespace == "" || o.Namespace == b.Namespace) {
			look(schema.FromAPIVersionAndKind(o.APIVersion, o.Kind), o.Name)
		}
	}
	for _, pd := range b.Status.PendingDeletions {
		if pd.Cluster == "" && pd.Namespace == b.Namespace {
			look(schema.FromAPIVersionAndKind(pd.APIVersion, pd.Kind), pd.Name)
		}
	}
	sortObjects(strays)
	return strays, errors.Join(errs...)
}

// keysOf is the set of objectKeys of objects, as a known for recordedStrays.
func keysOf(objects []*unstructured.Unstructured) map[string]bool {
	keys := make(map[string]bool, len(objects))
	for _, o := range objects {
		keys[objectKey(o)] = true
	}
	return keys
}
