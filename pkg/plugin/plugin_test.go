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
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr/funcr"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/responselimit"
)

func cm(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
}

// item is an object item of the given apiVersion, kind, namespace and name.
func item(apiVersion, kind, namespace, name string, desired bool) plugin.ObjectItem {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	return plugin.ObjectItem{Object: u, Desired: desired}
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
			name: "objects: an item listed both ways is desired, whichever comes first",
			inv: &plugin.Inventory{DesiredListed: 1, Objects: []plugin.ObjectItem{
				item("v1", "ConfigMap", "ns", "a", false), item("v1", "ConfigMap", "ns", "a", true),
				item("v1", "ConfigMap", "ns", "b", true), item("v1", "ConfigMap", "ns", "b", false),
				item("v1", "ConfigMap", "ns", "c", false),
			}},
			wantObjects: []string{"c"},
		},
		{
			name: "objects: the same name of another kind or namespace is another item",
			inv: &plugin.Inventory{DesiredListed: 1, Objects: []plugin.ObjectItem{
				item("v1", "ConfigMap", "ns", "a", true), item("v1", "Secret", "ns", "a", false), item("v1", "ConfigMap", "other", "a", false),
			}},
			wantObjects: []string{"a", "a"},
		},
		{
			name: "objects: the same object listed under another version is the same item",
			inv: &plugin.Inventory{DesiredListed: 1, Objects: []plugin.ObjectItem{
				item("apps/v1", "Deployment", "ns", "web", true), item("apps/v1beta2", "Deployment", "ns", "web", false),
			}},
		},
		{
			name: "external: an item listed both ways is desired, whichever comes first",
			inv: &plugin.Inventory{DesiredListed: 1, External: []plugin.ExternalItem{
				ext("1", false), ext("1", true), ext("2", true), ext("2", false), ext("3", false),
				{ExternalItem: limbov1alpha1.ExternalItem{Kind: "Other", ID: "1", Name: "other-1"}},
			}},
			wantExt: []string{"3", "1"},
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

// ObjectItems is the inventory's objects for the engine to judge: each desired
// item, and each orphan that is not also listed as desired (desired wins), in
// inventory order.
func TestInventoryObjectItems(t *testing.T) {
	for _, tc := range []struct {
		name string
		inv  *plugin.Inventory
		want []string // "name desired|orphan"
	}{
		{name: "nil inventory", inv: nil},
		{
			name: "each item listed once: all of them",
			inv: &plugin.Inventory{Objects: []plugin.ObjectItem{
				item("v1", "ConfigMap", "ns", "a", false), item("v1", "ConfigMap", "ns", "b", true),
			}},
			want: []string{"a orphan", "b desired"},
		},
		{
			name: "an item listed both ways: its desired listing only",
			inv: &plugin.Inventory{Objects: []plugin.ObjectItem{
				item("v1", "ConfigMap", "ns", "a", false), item("v1", "ConfigMap", "ns", "a", true),
				item("v1", "ConfigMap", "ns", "b", true), item("v1", "ConfigMap", "ns", "b", false),
				item("v1", "Secret", "ns", "a", false),
			}},
			want: []string{"a desired", "b desired", "a orphan"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, o := range tc.inv.ObjectItems() {
				judged := "orphan"
				if o.Desired {
					judged = "desired"
				}
				got = append(got, o.Object.GetName()+" "+judged)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ObjectItems = %q, want %q", got, tc.want)
			}
		})
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

// A call that ignores its context (a request without it, a sleep, a lock) is
// abandoned CallGrace after its context ended: WithTimeout returns then with
// ErrIgnoredContext, and what the call returns later is dropped; a late panic is
// recovered and logged, not the end of the process. A call that ends within the
// grace is waited for, its own answer kept. The bubble's clock is fake: the
// durations are exact, and the test takes no time.
func TestWithTimeoutAbandonsACallThatIgnoresItsContext(t *testing.T) {
	for _, tc := range []struct {
		name string
		// parent is the context WithTimeout is given.
		parent func() (context.Context, context.CancelFunc)
		// call is what the plugin does once its context ended: ignored for
		// the call's whole life, it runs only once WithTimeout returned.
		call      func(ctx context.Context) (int, error)
		ignores   bool
		wantAfter time.Duration
		wantV     int
		want      string
		wantIs    []error
		wantLog   string // "" = nothing logged
	}{
		{
			name:      "CallTimeout passed",
			parent:    func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			call:      func(context.Context) (int, error) { return 42, nil },
			ignores:   true,
			wantAfter: plugin.CallTimeout + plugin.CallGrace,
			want:      "timed out after 30s: the plugin ignored its context: no answer 5s after its end, the call is abandoned: context deadline exceeded",
			wantIs:    []error{plugin.ErrIgnoredContext, context.DeadlineExceeded},
		},
		{
			name: "the parent's shorter deadline passed",
			parent: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), time.Second)
			},
			call:      func(context.Context) (int, error) { return 42, nil },
			ignores:   true,
			wantAfter: time.Second + plugin.CallGrace,
			want:      "timed out after 30s: the plugin ignored its context: no answer 5s after its end, the call is abandoned: context deadline exceeded",
			wantIs:    []error{plugin.ErrIgnoredContext, context.DeadlineExceeded},
		},
		{
			name: "the parent cancelled: not a timeout",
			parent: func() (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx, cancel
			},
			call:      func(context.Context) (int, error) { return 42, nil },
			ignores:   true,
			wantAfter: plugin.CallGrace,
			want:      "the plugin ignored its context: no answer 5s after its end, the call is abandoned: context canceled",
			wantIs:    []error{plugin.ErrIgnoredContext, context.Canceled},
		},
		{
			name:      "a late panic is recovered",
			parent:    func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			call:      func(context.Context) (int, error) { panic("late boom") },
			ignores:   true,
			wantAfter: plugin.CallTimeout + plugin.CallGrace,
			want:      "timed out after 30s: the plugin ignored its context: no answer 5s after its end, the call is abandoned: context deadline exceeded",
			wantIs:    []error{plugin.ErrIgnoredContext, context.DeadlineExceeded},
			wantLog:   "late boom",
		},
		{
			name:   "an answer within the grace is kept",
			parent: func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			call: func(ctx context.Context) (int, error) {
				time.Sleep(plugin.CallGrace - time.Millisecond) // a slow but honest wind-down
				return 7, fmt.Errorf("list things: %w", ctx.Err())
			},
			wantAfter: plugin.CallTimeout + plugin.CallGrace - time.Millisecond,
			wantV:     7,
			want:      "timed out after 30s: list things: context deadline exceeded",
			wantIs:    []error{context.DeadlineExceeded},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				var logged []string
				logger := funcr.New(func(_, args string) {
					mu.Lock()
					defer mu.Unlock()
					logged = append(logged, args)
				}, funcr.Options{})
				parent, cancel := tc.parent()
				defer cancel()
				parent = log.IntoContext(parent, logger)

				release := make(chan struct{})
				start := time.Now()
				v, err := plugin.WithTimeout(parent, func(ctx context.Context) (int, error) {
					if tc.ignores {
						<-release
					} else {
						<-ctx.Done()
					}
					return tc.call(ctx)
				})
				if took := time.Since(start); took != tc.wantAfter {
					t.Errorf("WithTimeout returned after %v, want %v", took, tc.wantAfter)
				}
				if v != tc.wantV || err == nil || err.Error() != tc.want {
					t.Errorf("WithTimeout = %v, %v\nwant %v, %s", v, err, tc.wantV, tc.want)
				}
				for _, target := range tc.wantIs {
					if !errors.Is(err, target) {
						t.Errorf("err %v does not wrap %v", err, target)
					}
				}
				// The abandoned call returns (or panics) now: nothing of it reaches
				// the caller any more, and its goroutine ends.
				close(release)
				synctest.Wait()
				mu.Lock()
				defer mu.Unlock()
				switch {
				case tc.wantLog == "" && len(logged) > 0:
					t.Errorf("logged %q, want nothing", logged)
				case tc.wantLog != "" && (len(logged) != 1 || !strings.Contains(logged[0], "plugin call panicked") || !strings.Contains(logged[0], tc.wantLog)):
					t.Errorf("logged %q, want the panic %q once", logged, tc.wantLog)
				}
			})
		})
	}
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
