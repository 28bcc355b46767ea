package bundle

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
)

// An object adopted as it was read only: when another Bundle adopts it between
// the pass's read and its apply, the apply is a Conflict (its resourceVersion
// the read's), and the resource waits for the next read instead of taking the
// object over. The apply carried no precondition: under the field manager every
// Bundle shares, the API server dropped the other Bundle's owner reference and
// fields and gave the object to this one.
func TestAdoptionOfAnObjectAdoptedMeanwhile(t *testing.T) {
	registry, err := plugin.NewRegistry(neverReady{})
	if err != nil {
		t.Fatal(err)
	}
	b := livingBundle(cmResource(t, "mine", map[string]string{limbov1alpha1.AnnotationAdopt: "true"}))
	f := newTeardownFixture(t, b, registry, foreignConfigMap("mine", nil, ""))
	read := f.liveConfigMap(t, "mine").ResourceVersion
	var sent []string // the resourceVersion each apply of mine carried
	f.r.Client = interceptor.NewClient(labelledCache(f.c.(client.WithWatch)), interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if obj.GetName() != "mine" || patch.Type() != "application/apply-patch+yaml" {
				return c.Patch(ctx, obj, patch, opts...)
			}
			data, err := patch.Data(obj)
			if err != nil {
				return err
			}
			var applied metav1.PartialObjectMetadata
			if err := json.Unmarshal(data, &applied); err != nil {
				return err
			}
			if applied.ResourceVersion == createOnlyVersion {
				return c.Patch(ctx, obj, patch, opts...) // the create-only apply: the object is found
			}
			sent = append(sent, applied.ResourceVersion)
			// Another Bundle adopts it first.
			var cm corev1.ConfigMap
			if err := f.c.Get(ctx, client.ObjectKeyFromObject(obj), &cm); err != nil {
				return err
			}
			yes := true
			cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: limbov1alpha1.GroupVersion.String(), Kind: "Bundle", Name: "other", UID: "other-uid", Controller: &yes}}
			if err := f.c.Update(ctx, &cm); err != nil {
				return err
			}
			if applied.ResourceVersion != "" && applied.ResourceVersion != cm.ResourceVersion {
				// The API server's answer to a precondition that no longer holds.
				return apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "mine", errors.New("the object has been modified"))
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	f.reconcile(t)
	if len(sent) != 1 || sent[0] != read {
		t.Errorf("the adoption's applies carried the resourceVersions %q, want the read's %q", sent, read)
	}
	cm := f.liveConfigMap(t, "mine")
	if metav1.IsControlledBy(cm, b) || metav1.GetControllerOf(cm) == nil || metav1.GetControllerOf(cm).Name != "other" {
		t.Errorf("the object adopted meanwhile was taken over: %+v", cm.OwnerReferences)
	}
	if state, _ := f.resourceState(t, "mine"); state != limbov1alpha1.ResourceInProgress {
		t.Errorf("resource mine is %s, want InProgress until the next read", state)
	}
}
