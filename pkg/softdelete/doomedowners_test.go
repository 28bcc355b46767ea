package softdelete_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/meta/testrestmapper"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// The owners that would have the garbage collector delete an object its Bundle
// lets go of: the Bundle's other objects and owners gone; not the Bundle (the
// caller's), nor an owner outside the Bundle, nor one of a kind not served. An
// owner that cannot be read is an error, never a guess.
func TestDoomedOwners(t *testing.T) {
	ref := func(kind, name, uid string) metav1.OwnerReference {
		apiVersion := "v1"
		switch kind {
		case "Bundle":
			apiVersion = limbov1alpha1.GroupVersion.String()
		case "Gizmo", "Flaky":
			apiVersion = "example.com/v1"
		}
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid)}
	}
	existing := func(name, uid, bundle string) client.Object {
		o := cm(name, nil, nil)
		o.SetUID(types.UID(uid))
		if bundle != "" {
			o.SetLabels(map[string]string{bundleKey: bundle})
		}
		return o
	}
	owners := []client.Object{existing("web", "uid-web", "shop"), existing("elsewhere", "uid-elsewhere", "other"),
		existing("anchor", "uid-anchor", ""), existing("reborn", "uid-reborn", "shop")}
	for _, tc := range []struct {
		name    string
		refs    []metav1.OwnerReference
		bundle  string
		want    map[types.UID]string
		wantErr bool
	}{
		{name: "the Bundle's are the caller's", refs: []metav1.OwnerReference{ref("Bundle", "shop", "uid-shop"), ref("Bundle", "gone", "uid-gone")}, bundle: "shop"},
		{name: "an object of the Bundle", refs: []metav1.OwnerReference{ref("ConfigMap", "web", "uid-web")}, bundle: "shop",
			want: map[types.UID]string{"uid-web": `an object of Bundle "shop"`}},
		{name: "an object of another Bundle, or of none, stays an owner", refs: []metav1.OwnerReference{ref("ConfigMap", "elsewhere", "uid-elsewhere"), ref("ConfigMap", "anchor", "uid-anchor")}, bundle: "shop"},
		{name: "gone, or another object of the name now", refs: []metav1.OwnerReference{ref("ConfigMap", "ghost", "uid-ghost"), ref("ConfigMap", "reborn", "uid-reborn-before")}, bundle: "shop",
			want: map[types.UID]string{"uid-ghost": "gone", "uid-reborn-before": "gone"}},
		{name: "without a Bundle name only gone owners", refs: []metav1.OwnerReference{ref("ConfigMap", "web", "uid-web"), ref("ConfigMap", "anchor", "uid-anchor"), ref("ConfigMap", "ghost", "uid-ghost")},
			want: map[types.UID]string{"uid-ghost": "gone"}},
		{name: "a kind not served is kept", refs: []metav1.OwnerReference{ref("Gizmo", "g", "uid-g")}, bundle: "shop"},
		{name: "an owner that cannot be read refuses", refs: []metav1.OwnerReference{ref("ConfigMap", "locked", "uid-locked")}, bundle: "shop", wantErr: true},
		// Discovery failing is not a kind not served: the owner may well exist,
		// or be gone, and nothing is decided on a guess.
		{name: "an owner whose kind cannot be looked up refuses", refs: []metav1.OwnerReference{ref("Flaky", "f", "uid-f")}, bundle: "shop", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			if err := clientgoscheme.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			// Bundles are served: their references are skipped, not found unserved.
			if err := limbov1alpha1.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			mapper := flakyMapper{testrestmapper.TestOnlyStaticRESTMapper(scheme)}
			c := fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(mapper).WithObjects(owners...).
				WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if key.Name == "locked" {
						return apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, key.Name, errors.New("no"))
					}
					if obj.GetObjectKind().GroupVersionKind().Kind == "Flaky" {
						// A real client needs the kind's mapping for its request.
						_, err := mapper.RESTMapping(schema.GroupKind{Group: "example.com", Kind: "Flaky"})
						return err
					}
					return c.Get(ctx, key, obj, opts...)
				}}).Build()
			obj := cm("db", nil, nil)
			obj.SetOwnerReferences(tc.refs)
			got, err := softdelete.DoomedOwners(context.Background(), c, c.RESTMapper(), obj, tc.bundle)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want an error: %v", err, tc.wantErr)
			}
			if len(got) != 0 || len(tc.want) != 0 {
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("doomed = %v, want %v", got, tc.want)
				}
			}
		})
	}
}

// flakyMapper fails to look up kind Flaky as a discovery that cannot reach the
// API server does: an error that is not a NoMatch.
type flakyMapper struct{ meta.RESTMapper }

func (m flakyMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if gk.Kind == "Flaky" {
		return nil, errors.New("discovery: 503 Service Unavailable")
	}
	return m.RESTMapper.RESTMapping(gk, versions...)
}
