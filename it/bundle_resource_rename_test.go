package it

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A Bundle's objects are matched by object (kind and name), not by the name of
// the resource that declares them: renaming a resource while it keeps its object
// is no removal and re-creation. The object keeps its UID and is never stamped,
// not even for one pass — for a PersistentVolumeClaim a countdown started by
// mistake (or, without a delay, a delete) would be data loss.
func TestResourceRenameKeepsObject(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	delayed := map[string]any{limbov1alpha1.AnnotationDeletionDelay: "1h"}
	b := createBundle(t, ns, "rename", objectResource(t, "db", configMap("db", map[string]any{"a": "b"}, delayed)))
	waitReady(t, b)
	uid := string(getObject(t, configMapGVK, ns, "db").GetUID())

	// A watch sees every version of db: a stamp set by one pass and cancelled
	// by the next would slip between two polls.
	log := watchConfigMaps(t, ns)
	updateBundle(t, b, objectResource(t, "database", configMap("db", map[string]any{"a": "b"}, delayed)))
	cur := waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if err := resourceIs(cur, "database", limbov1alpha1.ResourceReady, ""); err != nil {
			return err
		}
		if st := resourceStatus(cur, "database"); st.Object == nil || st.Object.UID != uid {
			return fmt.Errorf("resource database names object %+v, want uid %s", st.Object, uid)
		}
		return nil
	})
	if st := resourceStatus(cur, "db"); st != nil {
		t.Errorf("the old resource name db is still in the status: %+v", st)
	}
	// Kept over several passes (a write of the Bundle's status triggers the
	// next one), never in limbo, never listed as pending.
	testenv.Consistently(t, 3*time.Second, func() error {
		if err := existsWithUID(t, configMapGVK, ns, "db", uid)(); err != nil {
			return err
		}
		if err := notInLimbo(getObject(t, configMapGVK, ns, "db")); err != nil {
			return err
		}
		if pd := getBundle(t, b).Status.PendingDeletions; len(pd) != 0 {
			return fmt.Errorf("pendingDeletions lists %+v after a rename", pd)
		}
		return nil
	})
	log.stop()
	for _, e := range log.events() {
		if e.name == "db" && (e.inLimbo || e.typ == watch.Deleted || e.uid != "" && string(e.uid) != uid) {
			t.Errorf("db went into limbo or was replaced during the rename; events: %v", log.events())
			break
		}
	}
}

// An object in limbo that comes back under another resource name than the one
// that left is desired again all the same: the countdown is cancelled (stamp and
// label gone, event DeletionCancelled) and the object kept (same UID). The match
// is by object; a match by resource name would let the countdown run out and
// delete an object the Bundle declares.
func TestObjectInLimboReAddedUnderNewResourceName(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	delayed := map[string]any{limbov1alpha1.AnnotationDeletionDelay: "1h"}
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil))
	b := createBundle(t, ns, "readd", keep, objectResource(t, "db", configMap("db", map[string]any{"a": "b"}, delayed)))
	b = waitReady(t, b)
	uid := string(getObject(t, configMapGVK, ns, "db").GetUID())

	updateBundle(t, b, keep)
	waitInLimbo(t, configMapGVK, ns, "db")
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if pd := cur.Status.PendingDeletions; len(pd) != 1 || pd[0].Name != "db" || pd[0].Resource != "db" {
			return fmt.Errorf("pendingDeletions = %+v, want db of resource db", pd)
		}
		return nil
	})

	updateBundle(t, b, keep, objectResource(t, "database", configMap("db", map[string]any{"a": "b"}, delayed)))
	u := waitObject(t, configMapGVK, ns, "db", notInLimbo)
	if string(u.GetUID()) != uid {
		t.Fatalf("db was re-created (uid %s, was %s)", u.GetUID(), uid)
	}
	if err := isControlledBy(u, b); err != nil {
		t.Error(err)
	}
	waitEvent(t, b, corev1.EventTypeNormal, "DeletionCancelled", fmt.Sprintf("ConfigMap %s/db is desired again: deletion cancelled", ns))
	noPendingDeletions(t, b)
	ready := waitReady(t, b)
	if st := resourceStatus(ready, "database"); st == nil || st.Object == nil || st.Object.UID != uid {
		t.Errorf("resource database: status %+v, want object uid %s", st, uid)
	}
}
