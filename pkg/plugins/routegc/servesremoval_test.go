package routegc

import (
	"cmp"
	"testing"
	"time"
	"weak"

	"github.com/limbo-dev/limbo/pkg/openstack"
)

// A listing stands for a removal's own only if it started after the removal
// was asked for — the same instant is no proof of that —, at most
// maxSharedListingAge before the removal acts, and with the same client.
func TestServesRemoval(t *testing.T) {
	asked := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	api, other := new(openstack.Client), new(openstack.Client)
	listing := func(started time.Time, c *openstack.Client) *serverListing {
		return &serverListing{started: started, client: weak.Make(c)}
	}
	for _, tc := range []struct {
		name    string
		listing *serverListing
		acts    time.Duration // after asked; 1s when 0
		want    bool
	}{
		{"none", nil, 0, false},
		{"started after", listing(asked.Add(time.Nanosecond), api), 0, true},
		{"started at the same instant", listing(asked, api), 0, false},
		{"started before", listing(asked.Add(-time.Nanosecond), api), 0, false},
		{"another client's", listing(asked.Add(time.Second), other), 0, false},
		{"the removal acts its maximum age after it started", listing(asked.Add(time.Second), api), time.Second + maxSharedListingAge, true},
		{"the removal acts later", listing(asked.Add(time.Second), api), time.Second + maxSharedListingAge + time.Nanosecond, false},
	} {
		acts := asked.Add(cmp.Or(tc.acts, time.Second))
		if got := tc.listing.servesRemoval(api, asked, acts); got != tc.want {
			t.Errorf("%s: servesRemoval = %v, want %v", tc.name, got, tc.want)
		}
	}
}
