package openstack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/limbo-dev/limbo/pkg/responselimit"
)

// bounded cuts an error's text at maxErrorText and keeps the sentinels callers
// test; a short error is returned as it is.
func TestBounded(t *testing.T) {
	long := strings.Repeat("é", maxErrorText) // 2 bytes a rune: cut inside one
	short := fmt.Errorf("get router r: %w", ErrNotFound)
	if got := bounded(short); got != short {
		t.Errorf("a short error was replaced: %v", got)
	}
	if bounded(nil) != nil {
		t.Error("nil is not nil")
	}
	for _, sentinel := range []error{ErrNotFound, ErrRevisionMismatch, responselimit.ErrTooLarge, context.DeadlineExceeded} {
		err := bounded(fmt.Errorf("list Nova servers: %w: %s", sentinel, long))
		if text := err.Error(); len(text) > maxErrorText || !strings.HasPrefix(text, "list Nova servers: ") || !strings.HasSuffix(text, "é…") {
			t.Errorf("%v: a text of %d bytes (%.40q … %q)", sentinel, len(text), text, text[max(0, len(text)-12):])
		}
		if !errors.Is(err, sentinel) {
			t.Errorf("the cut error no longer is %v", sentinel)
		}
		if errors.Is(err, context.Canceled) {
			t.Errorf("the cut error of %v is context.Canceled", sentinel)
		}
	}
}
