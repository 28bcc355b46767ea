// Package listpages reads a LIST page by page, as kubectl does (--chunk-size,
// client-go's pager): each answer holds at most a page of objects and the
// continue token of the next, so a kind with many objects is neither one huge
// answer nor one long read of etcd.
package listpages

import (
	"context"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Each lists with opts page by page and hands each page to add, in order, once
// the whole list is read: newPage makes the empty list each page is read into.
// opts set the page size (client.Limit); without one the API server answers
// everything in one page. The pages after the first carry the continue token
// and no resourceVersion (the API server refuses both together; the token
// already fixes the snapshot read), as client-go's pager sends them.
//
// A continue token expires once the API server has compacted its snapshot
// (about 5 minutes): the next page is then refused with 410 Gone. As client-go's
// pager does (FullListIfExpired), the list is then read again whole, in one
// answer with the caller's opts but no limit, and that answer is handed to add
// in place of the pages read so far. That is why the pages are held until the
// list is complete: add never sees an object twice, nor parts of two
// snapshots. Every caller keeps the whole list anyway; the pages spare the API
// server, not this process. A 410 on the first page (a resourceVersion the
// caller asked for that is too old) is returned: there is no snapshot to fall
// back from.
func Each[L client.ObjectList](ctx context.Context, r client.Reader, newPage func() L, add func(L), opts ...client.ListOption) error {
	pages, err := readPages(ctx, r, newPage, opts)
	if err != nil {
		return err
	}
	for _, page := range pages {
		add(page)
	}
	return nil
}

// readPages reads the list of opts page by page, or whole when a continue token
// expires (Each).
func readPages[L client.ObjectList](ctx context.Context, r client.Reader, newPage func() L, opts []client.ListOption) ([]L, error) {
	var pages []L
	pageOpts := opts
	for continuing := false; ; continuing = true {
		page := newPage()
		err := r.List(ctx, page, pageOpts...)
		if continuing && apierrors.IsResourceExpired(err) {
			whole := newPage()
			if err := r.List(ctx, whole, append(slices.Clip(opts), wholeList{})...); err != nil {
				return nil, err
			}
			return []L{whole}, nil
		}
		if err != nil {
			return nil, err
		}
		pages = append(pages, page)
		next := page.GetContinue()
		if next == "" {
			return pages, nil
		}
		pageOpts = append(slices.Clip(opts), continueFrom(next))
	}
}

// continueFrom asks for the page after the one whose continue token it is; it
// comes last among a page's options, after those of the first page.
type continueFrom string

func (token continueFrom) ApplyToList(lo *client.ListOptions) {
	lo.Continue = string(token)
	if lo.Raw != nil {
		raw := *lo.Raw // the caller's, which the first page was read with
		raw.ResourceVersion, raw.ResourceVersionMatch = "", ""
		lo.Raw = &raw
	}
}

// wholeList asks for the whole list in one answer, whatever page size the
// options before it set; the caller's resourceVersion, if any, is kept, as
// client-go's pager keeps it for its full list.
type wholeList struct{}

func (wholeList) ApplyToList(lo *client.ListOptions) {
	lo.Limit, lo.Continue = 0, ""
	if lo.Raw != nil {
		raw := *lo.Raw
		raw.Limit, raw.Continue = 0, ""
		lo.Raw = &raw
	}
}
