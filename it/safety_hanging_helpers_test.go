package it

import (
	"fmt"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/it/testplugin"
)

// hang is the yardstick of the tests that show a hanging plugin holds nothing
// else up: the calls of one kind that hang on a test plugin's domain. What a
// test waits for must happen while the very calls that began to hang still
// hang; a controller that waited for them would do it only once they gave up,
// after plugin.CallTimeout.
type hang struct {
	domain *testplugin.Domain
	call   testplugin.Call
	// least is how many calls hang; most, when not 0, how many may at once.
	least, most int
	// since is when the longest-held of them began to wait.
	since time.Time
}

// waitHang waits until at least least calls of kind call hang on domain, and
// fails at once when more than most do (0: any number).
func waitHang(t testing.TB, domain *testplugin.Domain, call testplugin.Call, least, most int) *hang {
	t.Helper()
	h := &hang{domain: domain, call: call, least: least, most: most}
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		since, held := h.held(t)
		if held < least {
			return fmt.Errorf("%d calls hang, want %d", held, least)
		}
		h.since = since
		return nil
	})
	return h
}

// still fails the test unless the calls that hung when waitHang returned still
// hang: what happened did so only once they had returned.
func (h *hang) still(t testing.TB, what string) {
	t.Helper()
	if since, held := h.held(t); !since.Equal(h.since) || held < h.least {
		t.Fatalf("%s only once the calls that hung since %s had returned (now %d hang, since %v): the hang held it up",
			what, h.since.Format(time.RFC3339Nano), held, since)
	}
}

// held is how many calls hang now, and since when; more than most fails the
// test.
func (h *hang) held(t testing.TB) (time.Time, int) {
	t.Helper()
	since, held := h.domain.BlockedSince(h.call)
	if h.most > 0 && held > h.most {
		t.Fatalf("%d calls hang on one domain at once, want at most %d", held, h.most)
	}
	return since, held
}
