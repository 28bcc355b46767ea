package listpages_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/limbo-dev/limbo/pkg/listpages"
	"github.com/limbo-dev/limbo/pkg/listpages/listpagestest"
)

func TestEach(t *testing.T) {
	var objects []client.Object
	for i := range 5 {
		objects = append(objects, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: fmt.Sprintf("cm-%d", i)}})
	}
	for _, tt := range []struct {
		name      string
		opts      []client.ListOption
		wantPages int
	}{
		{name: "no limit: one page", wantPages: 1},
		{name: "pages of 2", opts: []client.ListOption{client.Limit(2)}, wantPages: 3},
		{name: "pages of 5: one page", opts: []client.ListOption{client.Limit(5)}, wantPages: 1},
		// The API server refuses a continue token with a resourceVersion: the
		// pages after the first carry none.
		{name: "from the watch cache", opts: []client.ListOption{client.Limit(2), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}}}, wantPages: 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pages := 0
			c := fake.NewClientBuilder().WithObjects(objects...).WithInterceptorFuncs(interceptor.Funcs{
				List: listpagestest.List(func(client.ObjectList, *client.ListOptions) { pages++ }),
			}).Build()
			var names []string
			err := listpages.Each(context.Background(), c, func() *corev1.ConfigMapList { return &corev1.ConfigMapList{} },
				func(page *corev1.ConfigMapList) {
					for _, cm := range page.Items {
						names = append(names, cm.Name)
					}
				}, append([]client.ListOption{client.InNamespace("a")}, tt.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(names) != "[cm-0 cm-1 cm-2 cm-3 cm-4]" || pages != tt.wantPages {
				t.Errorf("read %v in %d pages, want every ConfigMap in %d", names, pages, tt.wantPages)
			}
		})
	}
}
