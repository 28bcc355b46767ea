package softdelete_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/go-logr/logr/funcr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// Every stamp, cancel and deletion is a line of the audit trail, with the same
// keys for objects, plugin items and Tombstones (docs/install.md, "Logs"):
// events expire, the log stays. Before, a Tombstone's stamp and cancel and a
// plugin item's stamp and cancel logged nothing under these messages, so
// `jq 'select(.msg == "stamped")'` never found deorbit stamping a cluster's
// claims, nor route-gc scheduling a route's removal.
func TestAuditTrail(t *testing.T) {
	item := limbov1alpha1.ExternalItem{Kind: "NeutronRoute", ID: "198.19.3.0/24->10.180.0.5"}
	for _, tc := range []struct {
		name string
		run  func(ctx context.Context, t *testing.T, h *harness)
		want []string
	}{{
		name: "a Tombstone made and cancelled",
		run: func(ctx context.Context, t *testing.T, h *harness) {
			ts, err := h.engine.OrphanExternal(ctx, bundle(), "route-gc", "routes", "15m", item)
			if err != nil {
				t.Fatal(err)
			}
			// The fake client gives objects no UID: "" below.
			if err := h.engine.CancelTombstone(ctx, bundle(), ts, "the item is desired again"); err != nil {
				t.Fatal(err)
			}
		},
		want: []string{
			`"level"=0 "msg"="stamped" "bundle"="team-a/shop" "object"="NeutronRoute 198.19.3.0/24->10.180.0.5" "uid"="" "resource"="routes" "deadline"="2025-03-14T12:45:45Z"`,
			`"level"=0 "msg"="cancelled" "bundle"="team-a/shop" "object"="NeutronRoute 198.19.3.0/24->10.180.0.5" "uid"="" "resource"="routes" "why"="the item is desired again"`,
		},
	}, {
		// A cancel says why, of an object as of a plugin item or a Tombstone: one
		// implementation announces them all. Before, an object's and a Tombstone's
		// cancel did not.
		name: "an object desired again, and one whose countdown a teardown cancels",
		run: func(ctx context.Context, t *testing.T, h *harness) {
			if _, err := h.engine.Desired(ctx, bundle(), h.live(t, "mine")); err != nil {
				t.Fatal(err)
			}
			if err := h.engine.CancelCountdown(ctx, bundle(), h.live(t, "due"), "the Bundle was deleted with --cascade=orphan"); err != nil {
				t.Fatal(err)
			}
		},
		want: []string{
			`"level"=0 "msg"="cancelled" "bundle"="team-a/shop" "object"="v1/ConfigMap team-a/mine" "uid"="uid-mine" "why"="desired again"`,
			`"level"=0 "msg"="cancelled" "bundle"="team-a/shop" "object"="v1/ConfigMap team-a/due" "uid"="uid-due" "why"="the Bundle was deleted with --cascade=orphan"`,
		},
	}, {
		name: "a Tombstone stamped again (its stamp unparsable)",
		run: func(ctx context.Context, t *testing.T, h *harness) {
			ts := &limbov1alpha1.Tombstone{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop-routes-1", UID: "uid-ts",
				Labels: map[string]string{bundleKey: "shop", pendingKey: "true"}, Annotations: map[string]string{delayKey: "15m", stampKey: "yesterday"}},
				Spec: limbov1alpha1.TombstoneSpec{Plugin: "route-gc", Resource: "routes", Item: item}}
			if err := h.client.Create(ctx, ts); err != nil {
				t.Fatal(err)
			}
			if _, err := h.engine.StampTombstone(ctx, ts, softdelete.Decide(now, softdelete.StateOf(ts, false))); err != nil {
				t.Fatal(err)
			}
		},
		want: []string{`"level"=0 "msg"="stamped" "bundle"="team-a/shop" "object"="NeutronRoute 198.19.3.0/24->10.180.0.5" "uid"="uid-ts" "resource"="routes" "deadline"="2025-03-14T12:45:45Z"`},
	}, {
		name: "a plugin item stamped",
		run: func(ctx context.Context, t *testing.T, h *harness) {
			h.engine.ProcessItems(ctx, bundle(), softdelete.ItemSet{Owner: owner, Delay: "10m", Items: []softdelete.Item{h.item(t, "drive", false, "n1", 0)}})
		},
		want: []string{`"level"=0 "msg"="stamped" "bundle"="team-a/shop" "object"="v1/ConfigMap team-a/drive" "uid"="uid-drive" "resource"="node-removal" "deadline"="2025-03-14T12:40:45Z"`},
	}, {
		name: "a plugin item desired again",
		run: func(ctx context.Context, t *testing.T, h *harness) {
			h.engine.ProcessItems(ctx, bundle(), softdelete.ItemSet{Owner: owner, Delay: "10m", Items: []softdelete.Item{h.item(t, "mine", true, "n1", 0)}})
		},
		want: []string{`"level"=0 "msg"="cancelled" "bundle"="team-a/shop" "object"="v1/ConfigMap team-a/mine" "uid"="uid-mine" "resource"="node-removal" "why"="desired again"`},
	}, {
		name: "a plugin item deleted at its deadline",
		run: func(ctx context.Context, t *testing.T, h *harness) {
			h.engine.ProcessItems(ctx, bundle(), softdelete.ItemSet{Owner: owner, Delay: "10m", Items: []softdelete.Item{h.item(t, "due", false, "n1", 0)}})
		},
		want: []string{`"level"=0 "msg"="deleted" "bundle"="team-a/shop" "object"="v1/ConfigMap team-a/due" "uid"="uid-due" "resource"="node-removal" "deadline"="2025-03-14T12:10:00Z"`},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, cm("drive", nil, nil), cm("mine", stamped("2025-03-14T12:00:00Z"), map[string]string{pendingKey: "true"}),
				cm("due", stamped("2025-03-14T12:00:00Z"), map[string]string{pendingKey: "true"}))
			var lines []string
			logger := funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{})
			tc.run(log.IntoContext(context.Background(), logger), t, h)
			if !reflect.DeepEqual(lines, tc.want) {
				t.Errorf("log lines:\n%s\nwant:\n%s", lines, tc.want)
			}
		})
	}
}
