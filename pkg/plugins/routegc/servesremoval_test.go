package routegc

import (
	"testing"
	"time"
	"weak"

	"github.com/limbo-dev/limbo/pkg/openstack"
)

// A listing stands for a removal's own only if it started after the removal
// was asked for — the same instant is no proof of that — and with the same
// client.
func TestServesRemoval(t *testing.T) {
	asked := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	api, other := new(openstack.Client), new(openstack.Client)
	listing := func(started time.Time, c *openstack.Client) *serverListing {
		return &serverListing{started: started, client: weak.Make(c)}
	}
	for _, tc := range []struct {
		name    string
		listing *serverListing
		want    bool
	}{
		{"none", nil, false},
		{"started after", listing(asked.Add(time.Nanosecond), api), true},
		{"started at the same instant", listing(asked, api), false},
		{"started before", listing(asked.Add(-time.Nanosecond), api), false},
		{"another client's", listing(asked.Add(time.Second), other), false},
	} {
		if got := tc.listing.servesRemoval(api, asked); got != tc.want {
			t.Errorf("%s: servesRemoval = %v, want %v", tc.name, got, tc.want)
		}
	}
}
