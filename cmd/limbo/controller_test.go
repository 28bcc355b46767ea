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

// The Lease is in the namespace the Deployment runs in (the downward API's
// POD_NAMESPACE), wherever an overlay moved it: the flag, in its args, did not
// move, and the controller in another namespace refused to start.
func TestLeaderElectionNamespaceFromPod(t *testing.T) {
	for _, tc := range []struct{ env, want string }{{"", "limbo-system"}, {"platform", "platform"}} {
		t.Setenv(podNamespaceEnv, tc.env)
		if got := newControllerCommand().Flags().Lookup("leader-election-namespace").DefValue; got != tc.want {
			t.Errorf("POD_NAMESPACE=%q: --leader-election-namespace defaults to %q, want %q", tc.env, got, tc.want)
		}
	}
}
