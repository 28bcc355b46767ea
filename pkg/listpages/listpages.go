// Package listpages reads a LIST page by page, as kubectl does (--chunk-size,
// client-go's pager): each answer holds at most a page of objects and the
// continue token of the next, so a kind with many objects is neither one huge
// answer nor one long read of etcd.
package listpages

import (
	"context"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Each lists with opts page by page, handing each page to add: newPage makes
// the empty list each page is read into. opts set the page size
// (client.Limit); without one the API server answers everything in one page.
// The pages after the first carry the continue token and no resourceVersion
// (the API server refuses both together; the token already fixes the
// snapshot read), as client-go's pager sends them.
func Each[L client.ObjectList](ctx context.Context, r client.Reader, newPage func() L, add func(L), opts ...client.ListOption) error {
	pageOpts := opts
	for {
		page := newPage()
		if err := r.List(ctx, page, pageOpts...); err != nil {
			return err
		}
		add(page)
		next := page.GetContinue()
		if next == "" {
			return nil
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
