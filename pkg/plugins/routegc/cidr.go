package routegc

import (
	"net/netip"
)

// Responsible reports whether route-gc may manage a route to destination: its
// first and its last address both lie inside the cluster CIDR (the rule of
// Kubernetes' route controller, which kubernikus's routegc adapted). A
// destination that does not parse is an error, and such a route is never
// touched. IPv4 and IPv6 never mix: a destination of the other family is
// outside.
func Responsible(cluster netip.Prefix, destination string) (bool, error) {
	dst, err := netip.ParsePrefix(destination)
	if err != nil {
		return false, err
	}
	dst = dst.Masked()
	return cluster.Contains(dst.Addr()) && cluster.Contains(lastAddr(dst)), nil
}

// lastAddr is the highest address of p (p masked).
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
