package main

import (
	"os"
	"runtime/debug"
	"testing"
)

// The controller collects at GOGC=75 unless its environment says otherwise:
// a GOGC of the Deployment's (even "100", the runtime's default) wins.
func TestDefaultGCPercent(t *testing.T) {
	gcPercent := func() int {
		p := debug.SetGCPercent(100)
		debug.SetGCPercent(p)
		return p
	}
	defer debug.SetGCPercent(gcPercent())
	for _, tc := range []struct {
		env  string // "-": unset
		want int
	}{
		{env: "-", want: defaultGCPercent},
		{env: "100", want: 100},
		{env: "off", want: 100}, // set, whatever its value: left to the runtime (which read it at start)
	} {
		debug.SetGCPercent(100)
		if tc.env == "-" {
			t.Setenv("GOGC", "") // restored after the test
			os.Unsetenv("GOGC")
		} else {
			t.Setenv("GOGC", tc.env)
		}
		setDefaultGCPercent()
		if got := gcPercent(); got != tc.want {
			t.Errorf("GOGC %s: GC percent %d, want %d", tc.env, got, tc.want)
		}
	}
}
