package simhttp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Serve serves h on addr ("" means "127.0.0.1:0", a free port) and returns the
// base URL, such as "http://127.0.0.1:5705", and a stop function. Stop calls
// beforeStop (if not nil; a simulator releases blocked requests there), shuts the
// server down gracefully for up to 5s, then closes it. Calling stop more than once
// is safe.
func Serve(name string, h http.Handler, addr string, beforeStop func()) (string, func() error, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("%s: listen %s: %w", name, addr, err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()

	var once sync.Once
	var stopErr error
	stop := func() error {
		once.Do(func() {
			if beforeStop != nil {
				beforeStop()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := hs.Shutdown(ctx); err != nil {
				_ = hs.Close()
				stopErr = err
			}
			if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) && stopErr == nil {
				stopErr = err
			}
		})
		return stopErr
	}
	return "http://" + ln.Addr().String(), stop, nil
}

// WriteJSON writes v as a JSON response with status. A value that does not
// marshal (a programming error in the simulator) is a plain-text 500.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "simulator: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// RandomBytes returns n random bytes.
func RandomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return b
}

// NewUUID returns a random (version 4) UUID string, the format StorageOS,
// Neutron and Nova use for ids.
func NewUUID() string {
	b := RandomBytes(16)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
