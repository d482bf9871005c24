package webhooks

import "net/netip"

// publicAddr tells whether an address is a public host a webhook may reach. The IANA IPv4 and
// IPv6 special-purpose registries decide, and so does every IPv4 address an IPv6 address embeds:
// a host with a translator or a tunnel in its path (NAT64, 6to4, ISATAP) would carry a request
// for such an address to the IPv4 address inside it.
//
// IPv6 is allowed only inside 2000::/3, the space IANA allocates for global unicast, and the
// NAT64 well-known prefix. Everything else is refused whole, whether the registry lists it or
// not: loopback, unspecified, IPv4-compatible (::/96, deprecated), IPv4-translated
// (::ffff:0:0:0/96, SIIT, never routed), local-use NAT64 (64:ff9b:1::/48), discard (100::/64),
// the dummy prefix (100:0:0:1::/64), SRv6 SIDs (5f00::/16), unique local, link-local,
// site-local and multicast. An address with a zone names an interface of this host: refused.
func publicAddr(a netip.Addr) bool {
	if !a.IsValid() || a.Zone() != "" {
		return false
	}
	if a.Is4In6() {
		return publicIPv4(a.Unmap()) // IPv4-mapped (::ffff:0:0/96) is the IPv4 address itself
	}
	if a.Is4() {
		return publicIPv4(a)
	}
	return publicIPv6(a)
}

// ipv4NotPublic are the ranges of the IANA IPv4 special-purpose registry that netip's predicates
// (loopback, private, link-local, multicast, unspecified, broadcast) leave out: none of them is a
// public host a webhook may reach.
var ipv4NotPublic = prefixes(
	"0.0.0.0/8",       // "this network"
	"100.64.0.0/10",   // carrier-grade NAT, where some clouds put metadata (100.100.100.200)
	"192.0.0.0/24",    // IETF protocol assignments (DS-Lite, NAT64 discovery, PCP and TURN anycast)
	"192.0.2.0/24",    // documentation
	"192.88.99.0/24",  // 6to4 relay anycast (deprecated)
	"198.18.0.0/15",   // benchmarking
	"198.51.100.0/24", // documentation
	"203.0.113.0/24",  // documentation
	"240.0.0.0/4",     // reserved, and broadcast
)

// publicIPv4 tells whether an IPv4 address is a public host.
func publicIPv4(a netip.Addr) bool {
	if !a.IsGlobalUnicast() || a.IsPrivate() {
		return false // loopback, link-local, multicast, unspecified, broadcast, RFC 1918
	}
	for _, p := range ipv4NotPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

var (
	// ipv6GlobalUnicast is the only IPv6 space IANA allocates for global unicast.
	ipv6GlobalUnicast = netip.MustParsePrefix("2000::/3")
	// nat64 is the NAT64 well-known prefix (RFC 6052): a translator sends 64:ff9b::a.b.c.d to
	// a.b.c.d, which decides. Outside 2000::/3, it is the one IPv6 range with public use there.
	nat64 = netip.MustParsePrefix("64:ff9b::/96")
	// sixToFour carries the IPv4 address of the tunnel's end in bits 16 to 47 (RFC 3056): it
	// decides.
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// ipv6NotPublic are the ranges inside 2000::/3 that the IANA IPv6 special-purpose registry says
// no public host lives in. 2001::/23 is refused whole: Teredo (2001::/32, whose server and
// client IPv4 addresses a Teredo host would send to directly; Teredo has no public service left),
// benchmarking, ORCHID and the protocol anycast addresses it holds are no webhook receivers.
var ipv6NotPublic = prefixes(
	"2001::/23",     // IETF protocol assignments, Teredo included
	"2001:db8::/32", // documentation
	"3fff::/20",     // documentation (RFC 9637)
)

// publicIPv6 tells whether an IPv6 address (not IPv4-mapped) is a public host.
func publicIPv6(a netip.Addr) bool {
	b := a.As16()
	if nat64.Contains(a) {
		return publicIPv4(netip.AddrFrom4([4]byte(b[12:16])))
	}
	if !ipv6GlobalUnicast.Contains(a) { // also false for an address with a zone
		return false
	}
	for _, p := range ipv6NotPublic {
		if p.Contains(a) {
			return false
		}
	}
	if sixToFour.Contains(a) && !publicIPv4(netip.AddrFrom4([4]byte(b[2:6]))) {
		return false
	}
	if isatap(b) && !publicIPv4(netip.AddrFrom4([4]byte(b[12:16]))) {
		return false
	}
	return true
}

// isatap tells whether an address has an ISATAP interface identifier (RFC 5214): 0000:5efe or
// 0200:5efe (the universal/local and group bits may be set) followed by an IPv4 address, in any
// /64 prefix, 6to4 ones included. An ISATAP host sends to that IPv4 address directly.
func isatap(b [16]byte) bool {
	return b[8]&^0x03 == 0 && b[9] == 0 && b[10] == 0x5e && b[11] == 0xfe
}

func prefixes(list ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(list))
	for i, p := range list {
		out[i] = netip.MustParsePrefix(p)
	}
	return out
}
