package simhttp_test

import (
	"io"
	"net/http"
	"regexp"
	"testing"

	"github.com/limbo-dev/limbo/pkg/simhttp"
)

// Serve answers on the returned URL until stop, which runs beforeStop once and
// may be called again.
func TestServe(t *testing.T) {
	stops := 0
	url, stop, err := simhttp.Serve("test", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		simhttp.WriteJSON(w, http.StatusTeapot, map[string]string{"a": "b"})
	}), "", func() { stops++ })
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTeapot || string(body) != `{"a":"b"}` || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("response = %d %q %q", resp.StatusCode, body, resp.Header.Get("Content-Type"))
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil || stops != 1 {
		t.Errorf("second stop = %v, beforeStop ran %d times", err, stops)
	}
	if resp, err := http.Get(url); err == nil {
		_ = resp.Body.Close()
		t.Error("still serving after stop")
	}
	if _, _, err := simhttp.Serve("test", http.NotFoundHandler(), "256.0.0.1:1", nil); err == nil {
		t.Error("listening on a bad address succeeded")
	}
}

func TestNewUUID(t *testing.T) {
	v4 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	a, b := simhttp.NewUUID(), simhttp.NewUUID()
	if !v4.MatchString(a) || a == b {
		t.Errorf("NewUUID = %q, %q", a, b)
	}
}
