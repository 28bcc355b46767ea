package limboscan

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/go-logr/logr/funcr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// loggedTo is a context whose logger appends each line's message to lines.
func loggedTo(lines *[]string) context.Context {
	return log.IntoContext(context.Background(), funcr.New(func(_, args string) { *lines = append(*lines, args) }, funcr.Options{}))
}

// A kind the controller may not list is skipped, and said once per kind; any
// other error is not the skip's to swallow.
func TestForbiddenSkip(t *testing.T) {
	var lines []string
	ctx := loggedTo(&lines)
	secrets := schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", errors.New("no"))
	var f Forbidden
	for i, tc := range []struct {
		gvk  schema.GroupVersionKind
		err  error
		want bool
	}{
		{secrets, forbidden, true},
		{secrets, forbidden, true},
		{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, forbidden, true},
		{secrets, apierrors.NewServiceUnavailable("etcd"), false},
	} {
		if got := f.Skip(ctx, tc.gvk, tc.err); got != tc.want {
			t.Errorf("call %d: Skip(%v, %v) = %v, want %v", i, tc.gvk, tc.err, got, tc.want)
		}
	}
	if len(lines) != 2 {
		t.Errorf("logged %d lines, want one per kind skipped:\n%q", len(lines), lines)
	}
}

// FailedGroups are the group versions a partial discovery could not read, in
// order; a whole failure, or none, has none.
func TestFailedGroups(t *testing.T) {
	failed := &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{}}
	for _, g := range []string{"e", "b", "d", "a", "c"} {
		failed.Groups[schema.GroupVersion{Group: g + ".example.com", Version: "v1"}] = errors.New("503")
	}
	groups, partial := FailedGroups(fmt.Errorf("discover: %w", failed))
	if got := fmt.Sprint(groups); !partial || got != "[a.example.com/v1 b.example.com/v1 c.example.com/v1 d.example.com/v1 e.example.com/v1]" {
		t.Errorf("FailedGroups = %s, %v; want the five in order, partial", got, partial)
	}
	for _, err := range []error{nil, errors.New("connection refused")} {
		if groups, partial := FailedGroups(err); groups != nil || partial {
			t.Errorf("FailedGroups(%v) = %v, %v; want none", err, groups, partial)
		}
	}
}

// Unavailable keeps the groups of the last discovery: a partial one sets them,
// a complete one clears them, a failed one leaves them; each change is logged
// once.
func TestUnavailableNote(t *testing.T) {
	partial := func(groups ...string) error {
		failed := &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{}}
		for _, g := range groups {
			failed.Groups[schema.GroupVersion{Group: g, Version: "v1"}] = errors.New("503")
		}
		return failed
	}
	var lines []string
	ctx := loggedTo(&lines)
	var u Unavailable
	for i, tc := range []struct {
		err         error
		wantPartial bool
		wantAny     bool
		wantLogged  int // lines so far
	}{
		{err: partial("metrics.k8s.io"), wantPartial: true, wantAny: true, wantLogged: 1},
		{err: partial("metrics.k8s.io"), wantPartial: true, wantAny: true, wantLogged: 1},
		{err: errors.New("connection refused"), wantAny: true, wantLogged: 1},
		{err: nil, wantLogged: 2},
		{err: nil, wantLogged: 2},
	} {
		if got := u.Note(ctx, tc.err); got != tc.wantPartial {
			t.Errorf("note %d (%v): partial %v, want %v", i, tc.err, got, tc.wantPartial)
		}
		if u.Any() != tc.wantAny || len(lines) != tc.wantLogged {
			t.Errorf("note %d (%v): Any %v, %d lines logged; want %v, %d", i, tc.err, u.Any(), len(lines), tc.wantAny, tc.wantLogged)
		}
	}
}
