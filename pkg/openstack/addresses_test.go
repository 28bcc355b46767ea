package openstack

import (
	"encoding/json"
	"net/netip"
	"reflect"
	"testing"
)

// serverAddresses reads what it can and tells when a server's addresses were
// not all readable: a listing with such a server cannot vouch for its routes.
func TestServerAddresses(t *testing.T) {
	for _, tc := range []struct {
		name      string
		addresses string
		want      []string
		malformed bool
	}{
		{"fixed and floating", `{"net":[{"addr":"10.0.0.1","version":4},{"addr":"172.24.4.1","OS-EXT-IPS:type":"floating"}]}`, []string{"10.0.0.1", "172.24.4.1"}, false},
		{"IPv4-mapped IPv6 unmapped", `{"net":[{"addr":"::ffff:10.0.0.1"}]}`, []string{"10.0.0.1"}, false},
		{"none", `{}`, nil, false},
		{"a network of another shape", `{"net":[{"addr":"10.0.0.1"}],"other":{"addr":"10.0.0.2"}}`, []string{"10.0.0.1"}, true},
		{"an entry without addr", `{"net":[{"addr":"10.0.0.1"},{"ip":"10.0.0.2"}]}`, []string{"10.0.0.1"}, true},
		{"an address that does not parse", `{"net":[{"addr":"10.0.0.0002"}]}`, nil, true},
		{"an entry that is not an object", `{"net":["10.0.0.1"]}`, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in map[string]any
			if err := json.Unmarshal([]byte(tc.addresses), &in); err != nil {
				t.Fatal(err)
			}
			got, malformed := serverAddresses(in)
			var want []netip.Addr
			for _, a := range tc.want {
				want = append(want, netip.MustParseAddr(a))
			}
			if !reflect.DeepEqual(got, want) || malformed != tc.malformed {
				t.Errorf("serverAddresses = %v, malformed %v; want %v, %v", got, malformed, want, tc.malformed)
			}
		})
	}
}
