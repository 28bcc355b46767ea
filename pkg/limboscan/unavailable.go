package limboscan

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// FailedGroups returns the API groups (group versions, sorted) that a partial
// discovery failure, as Kinds returns it, could not read, and whether err is
// one.
func FailedGroups(err error) ([]schema.GroupVersion, bool) {
	var failed *discovery.ErrGroupDiscoveryFailed
	if !errors.As(err, &failed) {
		return nil, false
	}
	groups := make([]schema.GroupVersion, 0, len(failed.Groups))
	for gv := range failed.Groups {
		groups = append(groups, gv)
	}
	slices.SortFunc(groups, func(a, b schema.GroupVersion) int { return strings.Compare(a.String(), b.String()) })
	return groups, true
}

// Unavailable remembers the API groups discovery could not read: an aggregated
// API whose service is down — a stale metrics-server APIService is the common
// one. Their kinds can be neither listed nor deleted; failing a scan for them
// would log an error, and retry at the pace of errors, for as long as the
// service stays down, which is not limbo's to mend. A scan reads the other
// groups and tries these again later (as Forbidden kinds), and each change of
// the set is logged once. The zero value is ready to use.
type Unavailable struct {
	mu     sync.Mutex
	groups []schema.GroupVersion
}

// Note records the groups err, from Kinds, names when it is a partial
// discovery failure, and reports whether it is: the caller then goes on
// without the error. A nil err clears the set; any other error leaves it as it
// is (discovery failed as a whole: nothing is known of the groups).
func (u *Unavailable) Note(ctx context.Context, err error) bool {
	groups, partial := FailedGroups(err)
	if err != nil && !partial {
		return false
	}
	u.mu.Lock()
	changed := !slices.Equal(u.groups, groups)
	u.groups = groups
	u.mu.Unlock()
	switch {
	case changed && partial:
		log.FromContext(ctx).Info("not scanning API groups discovery could not read (an aggregated API whose service is unavailable?); they are tried again later",
			"groups", groups, "reason", err.Error())
	case changed:
		log.FromContext(ctx).Info("every API group is readable again")
	}
	return partial
}

// Any reports whether the last Note recorded groups that could not be read.
func (u *Unavailable) Any() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.groups) > 0
}
