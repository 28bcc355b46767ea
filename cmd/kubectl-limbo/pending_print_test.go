package main

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// -o name's warning counts the items it leaves out and names each cluster
// once, in order.
func TestWarnLeftOut(t *testing.T) {
	for _, tc := range []struct {
		clusters []string
		want     string
	}{
		{nil, ""},
		{[]string{"east"}, "Warning: -o name leaves out 1 item in another cluster (east): kubectl would take its name for an object of this cluster; the table and -o json list it\n"},
		{[]string{"east", "east"}, "Warning: -o name leaves out 2 items in another cluster (east): kubectl would take their names for objects of this cluster; the table and -o json list them\n"},
		{[]string{"west", "east", "west"}, "Warning: -o name leaves out 3 items in other clusters (east, west): kubectl would take their names for objects of this cluster; the table and -o json list them\n"},
	} {
		var out bytes.Buffer
		warnLeftOut(&out, tc.clusters)
		if out.String() != tc.want {
			t.Errorf("warnLeftOut(%q) = %q, want %q", tc.clusters, out.String(), tc.want)
		}
	}
}

// -o json's now is the instant TIME-LEFT was computed at, to the second, as the
// deadlines are: TIME-LEFT is now to the deadline.
func TestPendingJSONNow(t *testing.T) {
	f := newFixture(t, nil, pendingObjects()...)
	code, out, errOut := f.run("pending", "-n", "team-a", "-o", "json")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var list struct {
		Now string `json:"now"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	if want := "2026-03-01T12:00:00Z"; list.Now != want {
		t.Errorf("now = %q, want %q", list.Now, want)
	}
}

// A copy of the -o json list (the printers may copy it) shares nothing with
// it.
func TestPendingListDeepCopy(t *testing.T) {
	want := testNow.Truncate(time.Second)
	deadline := want
	list := newPendingList([]pendingItem{{Name: "db", DeleteAfter: &deadline, countdown: countdownRunning}}, testNow)
	copied := list.DeepCopyObject().(*pendingList)
	*copied.Items[0].DeleteAfter = want.Add(time.Hour)
	copied.Items[0].Name = "other"
	if got := list.Items[0]; got.Name != "db" || !got.DeleteAfter.Equal(want) {
		t.Errorf("the original changed with its copy: %+v", got)
	}
}
