package webhooks

import (
	"net/netip"
	"testing"
)

// IPv6FormsOfSpecialIPv4 are IPv6 addresses that carry a special-purpose IPv4 address
// (loopback, the metadata service, a private one) in every way IPv6 embeds IPv4, and the
// ranges refused whole whatever they carry. The subscribe-time and connect-time tests of
// the guard (subscriptions_test.go) use them too.
var IPv6FormsOfSpecialIPv4 = []string{
	"::ffff:127.0.0.1",                     // IPv4-mapped loopback
	"::ffff:169.254.169.254",               // IPv4-mapped metadata service
	"::ffff:0:127.0.0.1",                   // IPv4-translated (SIIT) loopback: the probe of issue 10
	"::ffff:0:8.8.8.8",                     // IPv4-translated: refused whole, never routed
	"::127.0.0.1",                          // IPv4-compatible loopback (deprecated)
	"::8.8.8.8",                            // IPv4-compatible: refused whole
	"64:ff9b::127.0.0.1",                   // NAT64 of loopback
	"64:ff9b::169.254.169.254",             // NAT64 of the metadata service
	"64:ff9b::10.0.0.1",                    // NAT64 of a private address
	"64:ff9b:1::a00:1",                     // local-use NAT64 (RFC 8215): refused whole
	"64:ff9b:1::808:808",                   // local-use NAT64 of a public address: refused whole
	"2002:7f00:1::1",                       // 6to4 of loopback
	"2002:a9fe:a9fe::1",                    // 6to4 of the metadata service
	"2002:c0a8:1::1",                       // 6to4 of 192.168.0.1
	"2001:0:4136:e378:8000:63bf:80ff:fffe", // Teredo, client 127.0.0.1 (XOR 0xffffffff)
	"2001:0:a00:1:8000:63bf:f7f7:f7f7",     // Teredo, server 10.0.0.1
	"2001:0:4136:e378:8000:63bf:f7f7:f7f7", // Teredo of public addresses: refused whole
	"2606:4700::5efe:7f00:1",               // ISATAP interface id of loopback
	"2606:4700::200:5efe:a9fe:a9fe",        // ISATAP (u bit set) of the metadata service
	"2002:808:808::5efe:a00:1",             // 6to4 of a public address, ISATAP of a private one
}

func TestPublicAddrRefusesEveryIPv6FormOfASpecialIPv4Address(t *testing.T) {
	for _, addr := range IPv6FormsOfSpecialIPv4 {
		if publicAddr(netip.MustParseAddr(addr)) {
			t.Errorf("publicAddr(%s) = true", addr)
		}
	}
}

func TestPublicAddr(t *testing.T) {
	for _, c := range []struct {
		addr string
		want bool
	}{
		{"93.184.216.34", true},
		{"8.8.8.8", true},
		{"2606:4700::6810:84e5", true},
		{"64:ff9b::808:808", true},            // NAT64 of 8.8.8.8
		{"2002:808:808::1", true},             // 6to4 of 8.8.8.8
		{"::ffff:93.184.216.34", true},        // IPv4-mapped public
		{"2606:4700::200:5efe:808:808", true}, // ISATAP of a public address
		{"2620:4f:8000::1", true},             // AS112 direct delegation: globally reachable
		{"127.0.0.1", false},
		{"10.1.2.3", false},
		{"172.16.0.1", false},
		{"192.168.1.1", false},
		{"169.254.169.254", false},
		{"100.100.100.200", false},
		{"0.0.0.0", false},
		{"0.1.2.3", false},
		{"192.0.0.170", false},
		{"192.0.2.1", false},
		{"192.88.99.1", false},
		{"198.18.0.1", false},
		{"198.51.100.7", false},
		{"203.0.113.9", false},
		{"224.0.0.1", false},
		{"240.0.0.1", false},
		{"255.255.255.255", false},
		{"::", false},
		{"::1", false},
		{"2001:db8::1", false},
		{"3fff::1", false},           // documentation (RFC 9637)
		{"2001:2::1", false},         // benchmarking
		{"2001:3::1", false},         // AMT, in the IETF protocol block
		{"2001:20::1", false},        // ORCHIDv2
		{"100::1", false},            // discard
		{"100:0:0:1::1", false},      // dummy prefix
		{"5f00::1", false},           // SRv6 SIDs
		{"4000::1", false},           // unallocated, outside 2000::/3
		{"fc00::1", false},           // unique local
		{"fd12:3456::1", false},      // unique local
		{"fe80::1", false},           // link-local
		{"fec0::1", false},           // site-local (deprecated)
		{"ff02::1", false},           // multicast
		{"ff0e::1", false},           // global multicast
		{"2606:4700::1%eth0", false}, // a zone names an interface of this host
		{"::ffff:8.8.8.8%eth0", false},
	} {
		if got := publicAddr(netip.MustParseAddr(c.addr)); got != c.want {
			t.Errorf("publicAddr(%s) = %v, want %v", c.addr, got, c.want)
		}
	}
}
