package impersonation

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// forbidding answers every write with the API server's 403 for the impersonated
// user, or with status code when it is not 0.
func forbidding(code int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		user := r.Header.Get("Impersonate-User")
		st := metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
			Reason: metav1.StatusReasonForbidden, Code: http.StatusForbidden,
			Details: &metav1.StatusDetails{Name: "imp-a", Kind: "configmaps"},
			Message: `configmaps "imp-a" is forbidden: User "` + user + `" cannot patch resource "configmaps" in API group "" in the namespace "default"`}
		if code != 0 {
			st.Reason, st.Code, st.Message = metav1.StatusReasonInternalError, int32(code), "etcd is down"
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(int(st.Code))
		_ = json.NewEncoder(w).Encode(st)
	}
}

// A write as a Bundle's ServiceAccount that is refused is told apart from a
// refusal of a real but unprivileged ServiceAccount: when the ServiceAccount
// does not exist (one GET, as limbo), the error says so. It stays a Forbidden
// error (the resource's reason is still Forbidden).
func TestForbiddenWriteNamesAMissingServiceAccount(t *testing.T) {
	const forbidden = `configmaps "imp-a" is forbidden: User "system:serviceaccount:default:deployr" cannot patch resource "configmaps" in API group "" in the namespace "default"`
	existing := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "deployr", Namespace: "default"}}
	for _, tc := range []struct {
		name     string
		code     int             // the write's answer: 0 is Forbidden
		accounts []client.Object // what limbo's reader finds
		getErr   error           // what limbo's reader answers instead
		reader   bool            // a reader at all
		want     string
		gets     int32
	}{
		{name: "missing ServiceAccount", reader: true, gets: 1,
			want: forbidden + ` (ServiceAccount "deployr" does not exist in namespace "default")`},
		{name: "existing ServiceAccount", reader: true, accounts: []client.Object{existing}, gets: 1, want: forbidden},
		{name: "limbo may not read ServiceAccounts", reader: true, gets: 1,
			getErr: apierrors.NewForbidden(schema.GroupResource{Resource: "serviceaccounts"}, "deployr", nil), want: forbidden},
		{name: "no reader", want: forbidden},
		{name: "not a refusal", code: http.StatusInternalServerError, reader: true, want: "etcd is down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewServer(forbidding(tc.code))
			defer ts.Close()
			mapper := meta.NewDefaultRESTMapper(nil)
			mapper.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
			base := fake.NewClientBuilder().WithRESTMapper(mapper).Build()
			var gets atomic.Int32
			var reader client.Reader
			if tc.reader {
				reader = fake.NewClientBuilder().WithObjects(tc.accounts...).WithInterceptorFuncs(interceptor.Funcs{
					Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
						gets.Add(1)
						if _, ok := obj.(*corev1.ServiceAccount); !ok || key != client.ObjectKeyFromObject(existing) {
							t.Errorf("GET %T %v, want ServiceAccount default/deployr", obj, key)
						}
						if tc.getErr != nil {
							return tc.getErr
						}
						return c.Get(ctx, key, obj, opts...)
					}}).Build()
			}
			c := NewClient(base, reader, &rest.Config{Host: ts.URL})
			ctx := WithServiceAccount(context.Background(), "default", "deployr")
			u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "imp-a", "namespace": "default"}}}
			writes := map[string]func() error{
				"apply": func() error {
					return c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("limbo"))
				},
				"patch": func() error {
					return c.Patch(ctx, u.DeepCopy(), client.RawPatch("application/merge-patch+json", []byte(`{}`)))
				},
				"delete": func() error { return c.Delete(ctx, u.DeepCopy()) },
				"create": func() error { return c.Create(ctx, u.DeepCopy()) },
				"update": func() error { return c.Update(ctx, u.DeepCopy()) },
				"deleteAllOf": func() error {
					return c.DeleteAllOf(ctx, u.DeepCopy(), client.InNamespace("default"))
				},
			}
			for verb, write := range writes {
				gets.Store(0)
				err := write()
				if err == nil || err.Error() != tc.want {
					t.Errorf("%s: error %v\nwant %s", verb, err, tc.want)
				}
				if tc.code == 0 && !apierrors.IsForbidden(err) {
					t.Errorf("%s: error %v is no longer Forbidden", verb, err)
				}
				if n := gets.Load(); n != tc.gets {
					t.Errorf("%s: %d GETs of the ServiceAccount, want %d", verb, n, tc.gets)
				}
			}
		})
	}
}
