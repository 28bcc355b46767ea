package bench

import (
	"reflect"
	"testing"
)

func TestParseProcessStat(t *testing.T) {
	cases := []struct {
		name, stat string
		want       float64
		wantErr    bool
	}{
		{name: "plain", stat: "4242 (kube-apiserver) S 1 4242 4242 0 -1 4194560 1 0 0 0 512 88 0 0 20 0 12 0 5 0 0", want: 6.0},
		{name: "spaces and parentheses in the command name", stat: "7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 5 0 0", want: 0.07},
		{name: "no command name", stat: "7 a R 1", wantErr: true},
		{name: "too short", stat: "7 (a) R 1 2 3", wantErr: true},
		{name: "not a number", stat: "7 (a) R 1 7 7 0 -1 0 0 0 0 0 x 4 0", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseProcessStat(tc.stat)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error: %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("got %v s, want %v s", got, tc.want)
			}
		})
	}
}

func TestCPUUse(t *testing.T) {
	a, err := parseMachineStat("cpu  100 0 100 800 0 0 0 0 0 0\ncpu0 50 0 50 400 0 0 0 0 0 0\ncpu1 50 0 50 400 0 0 0 0 0 0\nintr 1\n")
	if err != nil {
		t.Fatal(err)
	}
	b, err := parseMachineStat("cpu  250 0 250 900 0 0 0 0 0 0\ncpu0 125 0 125 450 0 0 0 0 0 0\ncpu1 125 0 125 450 0 0 0 0 0 0\nintr 1\n")
	if err != nil {
		t.Fatal(err)
	}
	a.byProcess = map[string]float64{"kube-apiserver": 1, "etcd": 0.5}
	b.byProcess = map[string]float64{"kube-apiserver": 3.04, "etcd": 0.5, "limbo": 0.7}
	got := cpuUse(a, b)
	// 3 s busy and 1 s idle over 2 CPUs: 1.5 cores busy on average.
	want := &CPUUse{Seconds: 3, BusyCores: 1.5, ByProcess: map[string]float64{"kube-apiserver": 2, "etcd": 0, "limbo": 0.7}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("cpuUse = %+v, want %+v", got, want)
	}
	floor := &CPUUse{Seconds: 1.9, ByProcess: map[string]float64{"kube-apiserver": 1.5, "etcd": 0, "limbo-bench": 0.4}}
	if s := formatCPUByProcess(floor, want); s != "kube-apiserver 1.5/2.0, limbo 0.0/0.7, limbo-bench 0.4/0.0, other 0.0/0.3" {
		t.Errorf("formatCPUByProcess = %q", s)
	}
}

func TestParseMachineStatRejectsOtherFirstLine(t *testing.T) {
	if _, err := parseMachineStat("intr 1\n"); err == nil {
		t.Error("want an error")
	}
}
