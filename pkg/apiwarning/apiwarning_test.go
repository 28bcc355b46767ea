package apiwarning

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/go-logr/logr/funcr"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

func TestHandler(t *testing.T) {
	const deprecated, dropped = "v1 Endpoints is deprecated in v1.33+", `unknown field "dataa"`
	type warning struct {
		code int
		text string
	}
	for _, tc := range []struct {
		name           string
		quiet, collect bool
		warnings       []warning
		wantLogged     []string
		wantCollected  []string
	}{{
		name:       "logged once per text",
		warnings:   []warning{{299, deprecated}, {299, dropped}, {299, deprecated}},
		wantLogged: []string{deprecated, dropped},
	}, {
		name:     "codes other than 299 and empty texts are no warnings",
		warnings: []warning{{199, deprecated}, {299, ""}},
	}, {
		name:     "quiet: dropped",
		quiet:    true,
		warnings: []warning{{299, deprecated}},
	}, {
		name:          "collected, in order, each text once; and logged",
		collect:       true,
		warnings:      []warning{{299, dropped}, {299, deprecated}, {299, dropped}},
		wantLogged:    []string{dropped, deprecated},
		wantCollected: []string{dropped, deprecated},
	}, {
		name:          "quiet and collected: collected only",
		quiet:         true,
		collect:       true,
		warnings:      []warning{{299, deprecated}},
		wantCollected: []string{deprecated},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var logged []string
			ctx := log.IntoContext(context.Background(), funcr.New(func(_, args string) { logged = append(logged, args) }, funcr.Options{}))
			if tc.quiet {
				ctx = Quiet(ctx)
			}
			collected := func() []string { return nil }
			if tc.collect {
				ctx, collected = Collect(ctx)
			}
			h := NewHandler()
			for _, w := range tc.warnings {
				h.HandleWarningHeaderWithContext(ctx, w.code, "-", w.text)
			}
			var want []string
			for _, text := range tc.wantLogged {
				want = append(want, fmt.Sprintf(`"level"=0 "msg"="the API server warns" "warning"=%q`, text))
			}
			if !slices.Equal(logged, want) {
				t.Errorf("logged %q, want %q", logged, want)
			}
			if got := collected(); !slices.Equal(got, tc.wantCollected) {
				t.Errorf("collected %q, want %q", got, tc.wantCollected)
			}
		})
	}
}

// The record of logged texts is bounded: past maxLogged texts it starts again.
func TestHandlerForgetsPastTheBound(t *testing.T) {
	h := NewHandler()
	for i := range maxLogged + 1 {
		h.HandleWarningHeaderWithContext(context.Background(), 299, "-", fmt.Sprint(i))
	}
	if len(h.logged) != 1 {
		t.Errorf("%d texts remembered after %d, want 1 (the record started again)", len(h.logged), maxLogged+1)
	}
}
