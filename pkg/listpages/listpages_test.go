package listpages_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
		objects = append(objects, configMap(i))
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
		// Nor a resourceVersionMatch, which the API server refuses with a
		// continue token too.
		{name: "not older than a resourceVersion", opts: []client.ListOption{client.Limit(2), &client.ListOptions{Raw: &metav1.ListOptions{
			ResourceVersion: "1", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		}}}, wantPages: 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pages := 0
			c := fake.NewClientBuilder().WithObjects(objects...).WithInterceptorFuncs(interceptor.Funcs{
				List: listpagestest.List(func(client.ObjectList, *client.ListOptions) { pages++ }),
			}).Build()
			names, err := configMapNames(c, append([]client.ListOption{client.InNamespace("a")}, tt.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(names) != "[cm-0 cm-1 cm-2 cm-3 cm-4]" || pages != tt.wantPages {
				t.Errorf("read %v in %d pages, want every ConfigMap in %d", names, pages, tt.wantPages)
			}
		})
	}
}

// A continue token that has expired (410 Gone) is not the end of the list: the
// list is read again from its first page, once, and add gets those pages in
// place of the pages read before, so no object is handed over twice, and none
// that was deleted meanwhile. Each answer stays a page (deorbit pages to keep
// its answers bounded). An expired first page (a resourceVersion too old) has
// nothing to fall back from, and a second expiry is returned.
func TestEachAfterAnExpiredContinueToken(t *testing.T) {
	for _, tt := range []struct {
		name string
		// expire are the requests (1 is the first page) answered with 410 Gone.
		expire    []int
		opts      []client.ListOption
		want      string
		wantErr   bool
		wantReads string // each request's limit/continue/resourceVersion
	}{
		{name: "on the second page", expire: []int{2},
			want:      "[cm-1 cm-2 cm-3 cm-4 cm-5]",
			wantReads: "[2// 2/2/ 2// 2/2/ 2/4/]"},
		{name: "on the third page", expire: []int{3},
			want:      "[cm-1 cm-2 cm-3 cm-4 cm-5]",
			wantReads: "[2// 2/2/ 2/4/ 2// 2/2/ 2/4/]"},
		// The list is read again at the caller's resourceVersion.
		{name: "from the watch cache", expire: []int{2}, opts: []client.ListOption{&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}}},
			want:      "[cm-1 cm-2 cm-3 cm-4 cm-5]",
			wantReads: "[2//0 2/2/ 2//0 2/2/ 2/4/]"},
		{name: "on the first page", expire: []int{1}, wantErr: true,
			wantReads: "[2//]"},
		{name: "twice", expire: []int{2, 4}, wantErr: true,
			wantReads: "[2// 2/2/ 2// 2/2/]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var objects []client.Object
			for i := range 5 {
				objects = append(objects, configMap(i))
			}
			var reads []string
			paged := listpagestest.List(nil)
			c := fake.NewClientBuilder().WithObjects(objects...).WithInterceptorFuncs(interceptor.Funcs{
				List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
					lo := (&client.ListOptions{}).ApplyOptions(opts)
					rv := ""
					if lo.Raw != nil {
						rv = lo.Raw.ResourceVersion
					}
					reads = append(reads, fmt.Sprintf("%d/%s/%s", lo.Limit, lo.Continue, rv))
					if len(reads) == 1 {
						// The list changes after its first page: the whole list read
						// again must show it as it is now.
						if err := c.Delete(ctx, configMap(0)); err != nil {
							return err
						}
						if err := c.Create(ctx, configMap(5)); err != nil {
							return err
						}
					}
					if slices.Contains(tt.expire, len(reads)) {
						return apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result.")
					}
					return paged(ctx, c, list, opts...)
				},
			}).Build()
			names, err := configMapNames(c, append([]client.ListOption{client.InNamespace("a"), client.Limit(2)}, tt.opts...)...)
			if tt.wantErr != (err != nil) || fmt.Sprint(reads) != tt.wantReads {
				t.Fatalf("error %v after the reads (limit/continue/resourceVersion) %v; want error: %v, reads %s", err, reads, tt.wantErr, tt.wantReads)
			}
			if tt.wantErr {
				if !apierrors.IsResourceExpired(err) || names != nil {
					t.Errorf("error %v, handed over %v; want the 410 and nothing handed over", err, names)
				}
				return
			}
			if fmt.Sprint(names) != tt.want {
				t.Errorf("handed over %v, want %s: the list as read again, each ConfigMap once", names, tt.want)
			}
		})
	}
}

// Only an expired token is read again: any other error on a later page (the
// API server overloaded, a timeout) fails the read at once, and nothing is
// handed over. A list cut short is not the list: deorbit would take the
// objects it did not see for deleted.
func TestEachOtherErrorOnALaterPage(t *testing.T) {
	var objects []client.Object
	for i := range 5 {
		objects = append(objects, configMap(i))
	}
	reads := 0
	paged := listpagestest.List(nil)
	c := fake.NewClientBuilder().WithObjects(objects...).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if reads++; reads == 2 {
				return apierrors.NewTooManyRequests("the server is overloaded", 1)
			}
			return paged(ctx, c, list, opts...)
		},
	}).Build()
	names, err := configMapNames(c, client.InNamespace("a"), client.Limit(2))
	if !apierrors.IsTooManyRequests(err) || reads != 2 || names != nil {
		t.Errorf("error %v after %d reads, handed over %v; want the 429 after 2 reads, nothing handed over", err, reads, names)
	}
}

// An API server that answers the token it was sent, or pages without end,
// fails the read: the caller (the reaper scans every kind in turn) is not held
// for ever.
func TestEachListThatDoesNotEnd(t *testing.T) {
	for _, tt := range []struct {
		name      string
		next      func(sent string) string // the token answered to the token sent
		wantReads int
		wantErr   string
	}{
		{name: "the same token again", next: func(sent string) string { return "again" }, wantReads: 2, wantErr: "answered the continue token it was sent"},
		{name: "a new token every time", next: func(sent string) string { return sent + "x" }, wantReads: listpages.MaxPages, wantErr: "past 10000 pages"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reads := 0
			c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
				List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
					reads++
					list.SetContinue(tt.next((&client.ListOptions{}).ApplyOptions(opts).Continue))
					return nil
				},
			}).Build()
			handed := 0
			err := listpages.Each(context.Background(), c, func() *corev1.ConfigMapList { return &corev1.ConfigMapList{} },
				func(*corev1.ConfigMapList) { handed++ })
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || reads != tt.wantReads || handed != 0 {
				t.Errorf("error %v after %d reads, %d pages handed over; want %q after %d, none handed over", err, reads, handed, tt.wantErr, tt.wantReads)
			}
		})
	}
}

// configMapNames reads the ConfigMaps through listpages.Each and answers the
// names it was handed, in order (nil when none was).
func configMapNames(c client.Client, opts ...client.ListOption) ([]string, error) {
	var names []string
	err := listpages.Each(context.Background(), c, func() *corev1.ConfigMapList { return &corev1.ConfigMapList{} },
		func(page *corev1.ConfigMapList) {
			for _, cm := range page.Items {
				names = append(names, cm.Name)
			}
		}, opts...)
	return names, err
}

func configMap(i int) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: fmt.Sprintf("cm-%d", i)}}
}
