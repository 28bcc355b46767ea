// Package listpages reads a LIST page by page, as kubectl does (--chunk-size,
// client-go's pager): each answer holds at most a page of objects and the
// continue token of the next, so a kind with many objects is neither one huge
// answer nor one long read of etcd.
package listpages

import (
	"context"
	"fmt"
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
// (about 5 minutes): the next page is then refused with 410 Gone. The list is
// then read again from its first page, once, and those pages are handed to add
// in place of the pages read before. That is why the pages are held until the
// list is complete: add never sees an object twice, nor parts of two
// snapshots. Every caller keeps the whole list anyway; the pages spare the API
// server, not this process. client-go's pager reads the list whole instead
// (FullListIfExpired), in one answer: a caller that pages to keep each answer
// bounded (deorbit, reading a workload cluster) would then be refused by its
// own bound, after reading the data twice. A second expiry, and a 410 on the
// first page (a resourceVersion the caller asked for that is too old), are
// returned.
//
// An API server that answers the same token again, or pages without end (an
// aggregated API's bug), fails the read rather than holding the caller (the
// reaper scans every kind in turn) for ever.
func Each[L client.ObjectList](ctx context.Context, r client.Reader, newPage func() L, add func(L), opts ...client.ListOption) error {
	pages, err := readPages(ctx, r, newPage, opts)
	if apierrors.IsResourceExpired(err) && len(pages) > 0 {
		pages, err = readPages(ctx, r, newPage, opts)
	}
	if err != nil {
		return err
	}
	for _, page := range pages {
		add(page)
	}
	return nil
}

// MaxPages bounds the pages of one list: 10,000 pages of kubectl's 500 are 5
// million objects.
const MaxPages = 10_000

// readPages reads the list of opts page by page. On an error it returns the
// pages read before it with the error (Each tells an expired token from there).
func readPages[L client.ObjectList](ctx context.Context, r client.Reader, newPage func() L, opts []client.ListOption) ([]L, error) {
	var pages []L
	pageOpts, token := opts, ""
	for {
		page := newPage()
		if err := r.List(ctx, page, pageOpts...); err != nil {
			return pages, err
		}
		pages = append(pages, page)
		next := page.GetContinue()
		switch {
		case next == "":
			return pages, nil
		case next == token:
			return nil, fmt.Errorf("the API server answered the continue token it was sent (%d pages read): the list does not end", len(pages))
		case len(pages) == MaxPages:
			return nil, fmt.Errorf("the list goes on past %d pages", MaxPages)
		}
		token = next
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
