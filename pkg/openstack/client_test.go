package openstack_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/pkg/openstack"
	"github.com/limbo-dev/limbo/pkg/responselimit"
)

// A Keystone of the Bundle author's own (route-gc's authURL is theirs to write)
// that answers without end fails the login at responselimit's bounds: before,
// gophercloud read the whole answer, into memory and, for an error status, into
// the error's message (and so into the Bundle's status).
func TestNewBoundsKeystoneAnswers(t *testing.T) {
	for _, tc := range []struct {
		name        string
		status      int
		prefix      string // of the answer, followed by answerMiB MiB of x
		answerMiB   int
		maxErrorLen int
		wantErr     error // nil: any error, bounded
		readAll     bool  // the answer is within its bound: read whole
	}{
		// gophercloud keeps an error answer's body as its message, whatever
		// reading it returned: bounded, the message is.
		{"an error answer", http.StatusInternalServerError, "", 16, responselimit.MaxErrorBody + 1024, nil, false},
		{"an answer", http.StatusCreated, `{"token":{"catalog":[],"methods":["`, responselimit.MaxBody>>20 + 16, 4096, responselimit.ErrTooLarge, false},
		// A status gophercloud did not expect (Keystone answers 201): it keeps
		// the whole body, up to an answer's bound, as the error's message.
		{"an answer of a status not expected", http.StatusOK, "", 10, responselimit.MaxErrorBody + 5<<10, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var served atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("X-Subject-Token", "token")
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.prefix)
				chunk := strings.Repeat("x", 1<<20)
				for range tc.answerMiB {
					n, err := io.WriteString(w, chunk)
					served.Add(int64(n))
					if err != nil {
						return
					}
				}
			}))
			defer srv.Close()
			// Reading 64 MiB takes the race detector on a busy machine longer than
			// the default request timeout.
			_, err := openstack.New(context.Background(), openstack.Config{AuthURL: srv.URL + "/v3", Timeout: 5 * time.Minute,
				Credentials: openstack.Credentials{ApplicationCredentialID: "id", ApplicationCredentialSecret: "secret"}})
			switch {
			case err == nil:
				t.Fatal("the login succeeded")
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Errorf("error %.300v, want %v", err, tc.wantErr)
			case len(err.Error()) > tc.maxErrorLen:
				t.Errorf("the error's message is %d bytes long, want at most %d", len(err.Error()), tc.maxErrorLen)
			}
			if n := served.Load(); !tc.readAll && n >= int64(tc.answerMiB)<<20 {
				t.Errorf("all %d MiB of the answer were read", n>>20)
			}
		})
	}
}
