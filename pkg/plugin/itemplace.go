package plugin

import (
	"fmt"
	"strings"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// An external item is found on a place its resource's spec names and may change —
// route-gc's router, namespace-gc's StorageOS endpoint — and its ID is unique only
// there. A Tombstone is keyed by the item's ID alone, so the item's name carries
// the place, and DeleteExternal refuses an item found on another place than the
// spec names when its countdown ends (RefuseMovedItem): deleting by ID on the new
// place would delete an item of the same ID there without its countdown, or
// report a deletion that never happened when the new place has no such item.

// placeInName separates an item's own name from its place. Neither an item's own
// name (a namespace, a route's "<destination>-><nexthop>") nor a place (an ID, a
// URL) holds a space.
const placeInName = " on "

// ItemNameOn is the name of an item called name, found on place.
func ItemNameOn(name, place string) string { return name + placeInName + place }

// SplitItemName reads a name made by ItemNameOn back into the item's own name and
// its place; place is "" for a name without one (named by an older limbo: the
// item is judged on the place the spec names now).
func SplitItemName(name string) (own, place string) {
	own, place, _ = strings.Cut(name, placeInName)
	return own, place
}

// RefuseMovedItem refuses the delete of an item found on another place than place,
// the one the resource's spec names now (field is that spec field, for the
// message): the old place is no longer the resource's, and an item of the same
// ID on the new place has its own countdown to run. The refusal wraps
// ErrNotResponsible, so the Tombstone is cancelled (a forced one too) and the
// plan makes the new place's item a Tombstone of its own.
func RefuseMovedItem(item limbov1alpha1.ExternalItem, place, field string) error {
	own, was := SplitItemName(item.Name)
	if was == "" || was == place {
		return nil
	}
	return fmt.Errorf("%s %s was found on %s, and the resource now names %s (%s changed since its countdown began?): never touched: %w",
		item.Kind, own, was, place, field, ErrNotResponsible)
}
