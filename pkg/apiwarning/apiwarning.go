package apiwarning

import (
	"context"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Handler is the rest.WarningHandlerWithContext of limbo's clients: it gives a
// warning to the request's collector, if any, and logs it once, unless the
// request is quiet.
type Handler struct {
	mu     sync.Mutex
	logged map[string]bool
}

// maxLogged bounds the warning texts remembered as logged: past it the record
// starts again, and a warning may be logged once more.
const maxLogged = 1024

// NewHandler returns a Handler that has logged nothing.
func NewHandler() *Handler { return &Handler{logged: map[string]bool{}} }

// HandleWarningHeaderWithContext implements rest.WarningHandlerWithContext.
func (h *Handler) HandleWarningHeaderWithContext(ctx context.Context, code int, _ string, text string) {
	if code != 299 || text == "" {
		return
	}
	if c, ok := ctx.Value(collectorKey{}).(*collector); ok {
		c.add(text)
	}
	if quiet, _ := ctx.Value(quietKey{}).(bool); quiet {
		return
	}
	h.mu.Lock()
	first := !h.logged[text]
	if first {
		if len(h.logged) >= maxLogged {
			clear(h.logged)
		}
		h.logged[text] = true
	}
	h.mu.Unlock()
	if first {
		log.FromContext(ctx).Info("the API server warns", "warning", text)
	}
}

type quietKey struct{}

// Quiet returns ctx for requests whose warnings nobody can act on: they are
// dropped.
func Quiet(ctx context.Context) context.Context { return context.WithValue(ctx, quietKey{}, true) }

type collectorKey struct{}

type collector struct {
	mu    sync.Mutex
	texts []string
}

func (c *collector) add(text string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.texts {
		if t == text {
			return
		}
	}
	c.texts = append(c.texts, text)
}

// Collect returns ctx for requests whose warnings the caller wants, and a
// function that returns the distinct warnings of those requests so far, in the
// order they came.
func Collect(ctx context.Context) (context.Context, func() []string) {
	c := &collector{}
	return context.WithValue(ctx, collectorKey{}, c), func() []string {
		c.mu.Lock()
		defer c.mu.Unlock()
		return append([]string(nil), c.texts...)
	}
}
