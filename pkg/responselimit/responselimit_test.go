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
		{"a 400 is an error answer", 400, -1, responselimit.MaxErrorBody, "an error answer of GET"},
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
	// The call is over its budget: its next answer reads nothing.
	if read, err := get(ctx, t, rt); read != 0 || !errors.Is(err, responselimit.ErrTooLarge) {
		t.Errorf("third answer: read %d, %v; want nothing and ErrTooLarge", read, err)
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

// A call's budget (CallBudget) holds two answers of the largest size: a pass's
// pages and its discovery.
func TestCallBudgetHoldsTwoLargestAnswers(t *testing.T) {
	var served int64
	rt := responselimit.Transport(answering(200, responselimit.MaxBody, &served))
	ctx := responselimit.WithBudget(context.Background(), responselimit.CallBudget)
	for i := range 2 {
		if read, err := get(ctx, t, rt); err != nil || read != responselimit.MaxBody {
			t.Errorf("answer %d: read %d, %v; want it whole", i, read, err)
		}
	}
}

// The budget's error names its size as written: in MiB or KiB when whole, in
// bytes otherwise.
func TestCallBudgetNamesItsSize(t *testing.T) {
	for budget, want := range map[int64]string{
		3 << 20:      "longer than 3 MiB",
		1<<20 + 1:    "longer than 1048577 bytes",
		1 << 10:      "longer than 1 KiB",
		1<<10 + 1<<9: "longer than 1536 bytes",
		1000:         "longer than 1000 bytes",
	} {
		var served int64
		_, err := get(responselimit.WithBudget(context.Background(), budget), t, responselimit.Transport(answering(200, -1, &served)))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("budget %d: %v, want it %q", budget, err, want)
		}
	}
}

// A body that failed keeps failing, and takes nothing more from the server.
func TestBodyFailedStaysFailed(t *testing.T) {
	var served int64
	req, err := http.NewRequest(http.MethodGet, "https://keystone.example.com/v3", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := responselimit.Transport(answering(500, -1, &served)).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); !errors.Is(err, responselimit.ErrTooLarge) {
		t.Fatalf("first read: %v, want ErrTooLarge", err)
	}
	before := served
	if n, err := resp.Body.Read(make([]byte, 4096)); n != 0 || !errors.Is(err, responselimit.ErrTooLarge) || served != before {
		t.Errorf("read again: %d bytes, %v, %d more taken from the server; want 0, ErrTooLarge, none", n, err, served-before)
	}
}

// A response without a body (as a HEAD's may come) is passed on as it is, and
// no transport given is the default one.
func TestTransportEdges(t *testing.T) {
	bodiless := roundTripperFunc(func(*http.Request) (*http.Response, error) { return &http.Response{StatusCode: 200}, nil })
	req, err := http.NewRequest(http.MethodHead, "https://keystone.example.com/v3", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := responselimit.Transport(bodiless).RoundTrip(req) //nolint:bodyclose // the point: there is no body to close
	if err != nil || resp.Body != nil {
		t.Errorf("bodiless answer: %+v, %v; want it as it came", resp, err)
	}
	w, ok := responselimit.Transport(nil).(interface{ WrappedRoundTripper() http.RoundTripper })
	if !ok || w.WrappedRoundTripper() != http.DefaultTransport {
		t.Error("Transport(nil) does not wrap http.DefaultTransport")
	}
}
