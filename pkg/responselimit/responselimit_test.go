package responselimit_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/limbo-dev/limbo/pkg/responselimit"
)

// endless is a body that never ends; served counts what was read of it.
type endless struct{ served *int64 }

func (e endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	*e.served += int64(len(p))
	return len(p), nil
}

func (endless) Close() error { return nil }

// answering is a round tripper whose responses have status and a body of size
// bytes (negative: endless), counting the bytes read of them in served.
func answering(status int, size int64, served *int64) http.RoundTripper {
	return roundTripperFunc(func(*http.Request) (*http.Response, error) {
		var body io.ReadCloser = endless{served}
		if size >= 0 {
			body = io.NopCloser(io.LimitReader(endless{served}, size))
		}
		return &http.Response{StatusCode: status, Body: body}, nil
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func get(ctx context.Context, t *testing.T, rt http.RoundTripper) (int64, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://user:secret@keystone.example.com/v3/auth/tokens?token=t", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return io.Copy(io.Discard, resp.Body)
}

func TestBodies(t *testing.T) {
	for _, tc := range []struct {
		name     string
		status   int
		size     int64 // negative: endless
		wantRead int64
		wantErr  string // "": none
	}{
		{"an answer within the limit is read whole", 200, responselimit.MaxBody, responselimit.MaxBody, ""},
		{"an answer one byte longer fails at the limit", 200, responselimit.MaxBody + 1, responselimit.MaxBody,
			"response body too large: an answer of GET https://keystone.example.com/v3/auth/tokens is longer than 64 MiB, the most limbo reads"},
		{"an endless answer fails at the limit", 200, -1, responselimit.MaxBody, "longer than 64 MiB"},
		{"an error answer within its limit is read whole", 404, responselimit.MaxErrorBody, responselimit.MaxErrorBody, ""},
		{"an endless error answer fails at its limit", 500, -1, responselimit.MaxErrorBody,
			"response body too large: an error answer of GET https://keystone.example.com/v3/auth/tokens is longer than 64 KiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var served int64
			read, err := get(context.Background(), t, responselimit.Transport(answering(tc.status, tc.size, &served)))
			if read != tc.wantRead {
				t.Errorf("read %d bytes, want %d", read, tc.wantRead)
			}
			if served > tc.wantRead+1 {
				t.Errorf("%d bytes were taken from the server's body, want at most %d", served, tc.wantRead+1)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.wantErr != "" && (!errors.Is(err, responselimit.ErrTooLarge) || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want ErrTooLarge saying %q", err, tc.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("the error %q shows the URL's credentials or query", err)
			}
		})
	}
}

func TestCallBudget(t *testing.T) {
	var served int64
	rt := responselimit.Transport(answering(200, responselimit.MaxBody, &served))
	ctx := responselimit.WithBudget(context.Background(), responselimit.MaxBody+responselimit.MaxBody/2)
	if read, err := get(ctx, t, rt); err != nil || read != responselimit.MaxBody {
		t.Fatalf("first answer: read %d, %v; want it whole", read, err)
	}
	read, err := get(ctx, t, rt)
	if !errors.Is(err, responselimit.ErrTooLarge) || !strings.Contains(err.Error(), "the answers of one plugin call are longer than 96 MiB") {
		t.Errorf("second answer: %v, want ErrTooLarge for the call's budget", err)
	}
	if read != responselimit.MaxBody/2 {
		t.Errorf("second answer: read %d bytes, want the %d left of the budget", read, responselimit.MaxBody/2)
	}
	// Another call has its own budget; a request without one only the limits.
	for name, ctx := range map[string]context.Context{
		"another call": responselimit.WithBudget(context.Background(), responselimit.MaxBody),
		"no call":      context.Background(),
	} {
		if read, err := get(ctx, t, rt); err != nil || read != responselimit.MaxBody {
			t.Errorf("%s: read %d, %v; want the answer whole", name, read, err)
		}
	}
}

// closing is a round tripper that records CloseIdleConnections.
type closing struct {
	http.RoundTripper
	closed bool
}

func (c *closing) CloseIdleConnections() { c.closed = true }

// TestWrapped: http.Client's CloseIdleConnections and client-go's unwrapping
// reach the transport under.
func TestWrapped(t *testing.T) {
	under := &closing{RoundTripper: http.DefaultTransport}
	rt := responselimit.Transport(under)
	w, ok := rt.(interface{ WrappedRoundTripper() http.RoundTripper })
	if !ok || w.WrappedRoundTripper() != under {
		t.Errorf("WrappedRoundTripper does not give the transport under")
	}
	(&http.Client{Transport: rt}).CloseIdleConnections()
	if !under.closed {
		t.Errorf("CloseIdleConnections did not reach the transport under")
	}
}
