package plugin_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/responselimit"
)

func cm(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
}

func ext(id string, desired bool) plugin.ExternalItem {
	return plugin.ExternalItem{ExternalItem: limbov1alpha1.ExternalItem{Kind: "Thing", ID: id, Name: "name-" + id}, Desired: desired}
}

func objNames(items []plugin.ObjectItem) []string {
	var out []string
	for _, o := range items {
		out = append(out, o.Object.GetName())
	}
	return out
}

func extIDs(items []plugin.ExternalItem) []string {
	var out []string
	for _, e := range items {
		out = append(out, e.ID)
	}
	return out
}

// Orphans = existing − desired, in inventory order, for objects and external
// items alike; the safety rule refuses orphans when the desired side's listing
// was empty, unless the plugin says that "nothing should exist" is a real answer.
// It reads the listing, not the overlap: a healthy listing in which every
// existing item is stale (every node replaced) still yields orphans.
func TestInventoryOrphans(t *testing.T) {
	for _, tc := range []struct {
		name        string
		inv         *plugin.Inventory
		wantObjects []string
		wantExt     []string
		wantErr     error
	}{
		{name: "nil inventory has no orphans", inv: nil},
		{name: "empty inventory has no orphans", inv: &plugin.Inventory{}},
		{
			name: "everything desired",
			inv: &plugin.Inventory{
				Objects:  []plugin.ObjectItem{{Object: cm("a"), Desired: true}},
				External: []plugin.ExternalItem{ext("x", true)},
			},
		},
		{
			name: "objects: existing minus desired, in order",
			inv: &plugin.Inventory{DesiredListed: 1, Objects: []plugin.ObjectItem{
				{Object: cm("c"), Desired: false}, {Object: cm("a"), Desired: true}, {Object: cm("b"), Desired: false},
			}},
			wantObjects: []string{"c", "b"},
		},
		{
			name: "external: existing minus desired, in order",
			inv: &plugin.Inventory{DesiredListed: 1, External: []plugin.ExternalItem{
				ext("1", true), ext("3", false), ext("2", false),
			}},
			wantExt: []string{"3", "2"},
		},
		{
			name: "every existing item stale, listing healthy: all orphans",
			inv: &plugin.Inventory{
				DesiredListed: 3,
				Objects:       []plugin.ObjectItem{{Object: cm("old-node")}},
				External:      []plugin.ExternalItem{ext("x", false)},
			},
			wantObjects: []string{"old-node"},
			wantExt:     []string{"x"},
		},
		{
			name: "safety: an empty listing refuses orphans, even next to desired items",
			inv: &plugin.Inventory{
				Objects:  []plugin.ObjectItem{{Object: cm("keep"), Desired: true}},
				External: []plugin.ExternalItem{ext("x", false)},
			},
			wantErr: plugin.ErrEmptyDesired,
		},
		{
			name:    "safety: objects with an empty listing are refused",
			inv:     &plugin.Inventory{Objects: []plugin.ObjectItem{{Object: cm("a")}, {Object: cm("b")}}},
			wantErr: plugin.ErrEmptyDesired,
		},
		{
			name: "an empty listing without orphans is fine",
			inv:  &plugin.Inventory{Objects: []plugin.ObjectItem{{Object: cm("a"), Desired: true}}},
		},
		{
			name:    "safety: external items with nothing desired are refused",
			inv:     &plugin.Inventory{External: []plugin.ExternalItem{ext("x", false)}},
			wantErr: plugin.ErrEmptyDesired,
		},
		{
			name:    "an ID longer than a Tombstone holds refuses the inventory",
			inv:     &plugin.Inventory{DesiredListed: 1, External: []plugin.ExternalItem{ext("x", false), ext(strings.Repeat("i", limbov1alpha1.MaxItemID+1), true)}},
			wantErr: plugin.ErrItemTooLong,
		},
		{
			name: "a kind longer than a Tombstone holds refuses the inventory",
			inv: &plugin.Inventory{DesiredListed: 1, External: []plugin.ExternalItem{{ExternalItem: limbov1alpha1.ExternalItem{
				Kind: strings.Repeat("k", limbov1alpha1.MaxItemKind+1), ID: "x", Name: "x"}}}},
			wantErr: plugin.ErrItemTooLong,
		},
		{
			name: "a name longer than a Tombstone holds refuses the inventory",
			inv: &plugin.Inventory{DesiredListed: 1, External: []plugin.ExternalItem{{ExternalItem: limbov1alpha1.ExternalItem{Kind: "Thing", ID: "x",
				Name: strings.Repeat("n", limbov1alpha1.MaxItemName+1)}}}},
			wantErr: plugin.ErrItemTooLong,
		},
		{
			name: "fields at their bounds are fine",
			inv: &plugin.Inventory{DesiredListed: 1, External: []plugin.ExternalItem{{ExternalItem: limbov1alpha1.ExternalItem{
				Kind: strings.Repeat("k", limbov1alpha1.MaxItemKind), ID: strings.Repeat("i", limbov1alpha1.MaxItemID), Name: strings.Repeat("n", limbov1alpha1.MaxItemName)}}}},
			wantExt: []string{strings.Repeat("i", limbov1alpha1.MaxItemID)},
		},
		{
			name: "EmptyDesiredIsValid: everything is an orphan",
			inv: &plugin.Inventory{
				Objects:             []plugin.ObjectItem{{Object: cm("a")}},
				External:            []plugin.ExternalItem{ext("x", false), ext("y", false)},
				EmptyDesiredIsValid: true,
			},
			wantObjects: []string{"a"},
			wantExt:     []string{"x", "y"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objects, external, err := tc.inv.Orphans()
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err != nil && (objects != nil || external != nil) {
				t.Errorf("refused inventory returned orphans: %v %v", objNames(objects), extIDs(external))
			}
			if got := objNames(objects); !reflect.DeepEqual(got, tc.wantObjects) {
				t.Errorf("object orphans = %q, want %q", got, tc.wantObjects)
			}
			if got := extIDs(external); !reflect.DeepEqual(got, tc.wantExt) {
				t.Errorf("external orphans = %q, want %q", got, tc.wantExt)
			}
		})
	}
}

func TestErrEmptyDesiredMessage(t *testing.T) {
	_, _, err := (&plugin.Inventory{External: []plugin.ExternalItem{ext("x", false)}}).Orphans()
	const want = "refusing to compute orphans: the listing of what should exist is empty, which more likely means it could not be listed"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
}

// Desired lists what should exist (to cancel countdowns), and is not subject to
// the safety rule: an empty desired side is simply empty.
func TestInventoryDesired(t *testing.T) {
	inv := &plugin.Inventory{
		Objects:  []plugin.ObjectItem{{Object: cm("a"), Desired: true}, {Object: cm("b")}, {Object: cm("c"), Desired: true}},
		External: []plugin.ExternalItem{ext("1", false), ext("2", true)},
	}
	objects, external := inv.Desired()
	if got := objNames(objects); !reflect.DeepEqual(got, []string{"a", "c"}) {
		t.Errorf("desired objects = %q", got)
	}
	if got := extIDs(external); !reflect.DeepEqual(got, []string{"2"}) {
		t.Errorf("desired external = %q", got)
	}
	if objects, external := (*plugin.Inventory)(nil).Desired(); objects != nil || external != nil {
		t.Errorf("nil inventory desired = %v %v", objects, external)
	}
	if objects, external := (&plugin.Inventory{External: []plugin.ExternalItem{ext("x", false)}}).Desired(); objects != nil || external != nil {
		t.Errorf("nothing desired = %v %v", objects, external)
	}
}

// WithTimeout bounds every plugin call by CallTimeout, passes results and errors
// through, and names a timeout as such.
func TestWithTimeout(t *testing.T) {
	if plugin.CallTimeout != 30*time.Second {
		t.Errorf("CallTimeout = %v, want 30s", plugin.CallTimeout)
	}

	t.Run("the call runs under a deadline of at most CallTimeout", func(t *testing.T) {
		var inner context.Context
		v, err := plugin.WithTimeout(context.Background(), func(ctx context.Context) (int, error) {
			inner = ctx
			deadline, ok := ctx.Deadline()
			if !ok {
				return 0, errors.New("no deadline")
			}
			if d := time.Until(deadline); d <= 0 || d > plugin.CallTimeout {
				return 0, fmt.Errorf("deadline in %v, want within (0, %v]", d, plugin.CallTimeout)
			}
			return 42, nil
		})
		if err != nil || v != 42 {
			t.Fatalf("WithTimeout = %v, %v; want 42, nil", v, err)
		}
		if inner.Err() == nil {
			t.Error("the call's context is still live after WithTimeout returned")
		}
	})

	t.Run("a shorter parent deadline is kept", func(t *testing.T) {
		parent, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		want, _ := parent.Deadline()
		_, _ = plugin.WithTimeout(parent, func(ctx context.Context) (struct{}, error) {
			if got, _ := ctx.Deadline(); !got.Equal(want) {
				t.Errorf("deadline = %v, want the parent's %v", got, want)
			}
			return struct{}{}, nil
		})
	})

	t.Run("the call's answers share responselimit.CallBudget", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write(make([]byte, responselimit.MaxBody)) // each answer within its own bound
		}))
		defer srv.Close()
		hc := &http.Client{Transport: responselimit.Transport(nil)}
		read, err := plugin.WithTimeout(context.Background(), func(ctx context.Context) (int64, error) {
			var read int64
			for range responselimit.CallBudget/responselimit.MaxBody + 1 {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
				resp, err := hc.Do(req)
				if err != nil {
					return read, err
				}
				n, err := io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				if read += n; err != nil {
					return read, err
				}
			}
			return read, nil
		})
		if !errors.Is(err, responselimit.ErrTooLarge) || read != responselimit.CallBudget {
			t.Errorf("read %d bytes, %v; want CallBudget (%d), then ErrTooLarge", read, err, int64(responselimit.CallBudget))
		}
	})

	t.Run("errors pass through unchanged", func(t *testing.T) {
		boom := errors.New("boom")
		v, err := plugin.WithTimeout(context.Background(), func(context.Context) (string, error) { return "partial", boom })
		if err != boom || v != "partial" {
			t.Errorf("WithTimeout = %q, %v; want \"partial\", boom unwrapped", v, err)
		}
	})

	t.Run("a timeout is named", func(t *testing.T) {
		parent, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		defer cancel()
		_, err := plugin.WithTimeout(parent, func(ctx context.Context) (int, error) {
			<-ctx.Done()
			return 0, fmt.Errorf("list things: %w", ctx.Err())
		})
		const want = "timed out after 30s: list things: context deadline exceeded"
		if err == nil || err.Error() != want {
			t.Fatalf("err = %v, want %q", err, want)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err %v does not wrap context.DeadlineExceeded", err)
		}
	})

	t.Run("a panic is the call's error, with the panic value", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			call func() int
			want string
		}{
			{"makeslice with a forged count", func() int { n := -1; return len(make([]string, n)) }, "makeslice: len out of range"},
			{"panic(value)", func() int { panic("boom") }, "boom"},
			{"panic(nil)", func() int { panic(nil) }, "panic called with nil argument"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				v, err := plugin.WithTimeout(context.Background(), func(context.Context) (int, error) { return tc.call(), nil })
				var perr *plugin.PanicError
				if !errors.As(err, &perr) || v != 0 || !strings.Contains(err.Error(), "the plugin panicked") || !strings.Contains(err.Error(), tc.want) || len(perr.Stack) == 0 {
					t.Errorf("WithTimeout = %v, %v; want a *PanicError naming %q, with the stack", v, err, tc.want)
				}
			})
		}
	})

	t.Run("a cancel is not a timeout", func(t *testing.T) {
		parent, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := plugin.WithTimeout(parent, func(ctx context.Context) (int, error) { return 0, ctx.Err() })
		if !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "timed out") {
			t.Errorf("err = %v, want context.Canceled, not named a timeout", err)
		}
	})
}

// ResourceStates gives each Bundle resource its own state, the same one on every
// call, and a re-created Bundle (another UID) a fresh one.
func TestResourceStates(t *testing.T) {
	made := 0
	states := plugin.ResourceStates[int]{New: func() *int { made++; v := made; return &v }}
	req := func(uid, resource string) plugin.Request {
		return plugin.Request{Bundle: &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}}, Resource: resource}
	}
	a, b := states.Of(req("u1", "a")), states.Of(req("u1", "b"))
	if a == b || states.Of(req("u1", "a")) != a || *a != 1 || *b != 2 {
		t.Errorf("states: a=%d b=%d", *a, *b)
	}
	if c := states.Of(req("u2", "a")); c == a || *c != 3 {
		t.Errorf("a re-created Bundle shares its predecessor's state")
	}
}

// An item found on another place than the one the spec names now is refused for
// good (ErrNotResponsible); one found there, or named before names carried a
// place, is not.
func TestRefuseMovedItem(t *testing.T) {
	for _, tc := range []struct {
		name    string
		refused bool
	}{
		{plugin.ItemNameOn("x", "router r1"), false},
		{plugin.ItemNameOn("x", "router r0"), true},
		{"x", false},
	} {
		err := plugin.RefuseMovedItem(limbov1alpha1.ExternalItem{Kind: "Thing", ID: "x", Name: tc.name}, "router r1", "routerID")
		if (err != nil) != tc.refused || (err != nil && !errors.Is(err, plugin.ErrNotResponsible)) {
			t.Errorf("RefuseMovedItem(%q) = %v, want refused %v (ErrNotResponsible)", tc.name, err, tc.refused)
		}
	}
}

// A Secret's key set to an empty value is missing: Values names every key needed.
func TestSecretValues(t *testing.T) {
	s := plugin.Secret{Name: "creds", Data: map[string][]byte{"username": []byte("admin"), "password": {}}}
	if v, err := s.Values("username"); err != nil || !reflect.DeepEqual(v, []string{"admin"}) {
		t.Errorf("Values(username) = %q, %v", v, err)
	}
	if v, err := s.Values("username", "password"); err == nil || err.Error() != `credentials Secret "creds" needs the keys username and password` {
		t.Errorf("Values(username, password) = %q, %v; want the empty password refused", v, err)
	}
}
