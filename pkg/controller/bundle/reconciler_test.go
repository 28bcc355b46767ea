package bundle

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A Conflict on the Bundle is requeued at once, as the cache catches up; one
// on its objects backs off like any error, so that one that persists is not
// retried ten times a second.
func TestConflictOnBundle(t *testing.T) {
	onBundle := apierrors.NewConflict(schema.GroupResource{Group: "limbo.dev", Resource: "bundles"}, "shop", errors.New("the object has been modified"))
	onObject := apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "settings", errors.New("the object has been modified"))
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"a status write's conflict", fmt.Errorf("write status: %w", onBundle), true},
		{"an object's conflict", errors.Join(fmt.Errorf("apply ConfigMap %q: %w", "settings", onObject)), false},
		{"an object's conflict among other errors", errors.Join(errors.New("boom"), onObject), false},
		{"a Tombstone's conflict", apierrors.NewConflict(schema.GroupResource{Group: "limbo.dev", Resource: "tombstones"}, "t", errors.New("modified")), false},
		{"a conflict of another group's bundles", apierrors.NewConflict(schema.GroupResource{Group: "example.com", Resource: "bundles"}, "b", errors.New("modified")), false},
		{"another error", errors.New("boom"), false},
		{"none", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := conflictOnBundle(tc.err); got != tc.want {
				t.Errorf("conflictOnBundle(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
