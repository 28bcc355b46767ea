// Package listpagestest makes a fake client answer LISTs in pages, as the API
// server does: controller-runtime's fake client ignores Limit and Continue.
package listpagestest

import (
	"context"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// List is an interceptor.Funcs List that answers with at most Limit objects
// and a continue token for the rest, as the API server does; the token is the
// offset of the next page. Like the API server, it refuses a continue token
// with a resourceVersion or a resourceVersionMatch. pages, if not nil, is called with each list read and
// its options, so that a test can count the pages.
func List(pages func(list client.ObjectList, opts *client.ListOptions)) func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
	return func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		lo := (&client.ListOptions{}).ApplyOptions(opts)
		if lo.Continue != "" && lo.Raw != nil && lo.Raw.ResourceVersion != "" {
			return apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
		}
		if lo.Continue != "" && lo.Raw != nil && lo.Raw.ResourceVersionMatch != "" {
			return apierrors.NewBadRequest("resourceVersionMatch is forbidden when continue is provided")
		}
		whole := *lo
		whole.Limit, whole.Continue = 0, ""
		if err := c.List(ctx, list, &whole); err != nil {
			return err
		}
		if pages != nil {
			pages(list, lo)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return err
		}
		offset := 0
		if lo.Continue != "" {
			if offset, err = strconv.Atoi(lo.Continue); err != nil || offset > len(items) {
				return apierrors.NewBadRequest(fmt.Sprintf("invalid continue token %q", lo.Continue))
			}
		}
		end, next := len(items), ""
		if lo.Limit > 0 && int64(len(items)-offset) > lo.Limit {
			end = offset + int(lo.Limit)
			next = strconv.Itoa(end)
		}
		if err := meta.SetList(list, items[offset:end]); err != nil {
			return err
		}
		list.SetContinue(next)
		return nil
	}
}
