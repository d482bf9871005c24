package webhooks

import (
	"net/netip"
	"testing"
)

func TestAllowedAddr(t *testing.T) {
	for _, c := range []struct {
		addr string
		want bool
	}{
		{"93.184.216.34", true},
		{"8.8.8.8", true},
		{"2606:4700::6810:84e5", true},
		{"64:ff9b::808:808", true}, // NAT64 of 8.8.8.8
		{"2002:808:808::1", true},  // 6to4 of 8.8.8.8
		{"::ffff:93.184.216.34", true},
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
		{"198.18.0.1", false},
		{"198.51.100.7", false},
		{"203.0.113.9", false},
		{"224.0.0.1", false},
		{"240.0.0.1", false},
		{"255.255.255.255", false},
		{"::", false},
		{"::1", false},
		{"::127.0.0.1", false},
		{"::ffff:127.0.0.1", false},
		{"::ffff:169.254.169.254", false},
		{"64:ff9b::7f00:1", false},                      // NAT64 of 127.0.0.1
		{"64:ff9b::a9fe:a9fe", false},                   // NAT64 of the metadata service
		{"64:ff9b:1::808:808", false},                   // local-use NAT64
		{"2002:7f00:1::", false},                        // 6to4 of 127.0.0.1
		{"2002:a00:1::", false},                         // 6to4 of 10.0.0.1
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", false}, // Teredo
		{"2001:db8::1", false},
		{"fc00::1", false},
		{"fd12:3456::1", false},
		{"fe80::1", false},
		{"fec0::1", false},
		{"ff02::1", false},
		{"100::1", false},
	} {
		if got := allowedAddr(netip.MustParseAddr(c.addr)); got != c.want {
			t.Errorf("allowedAddr(%s) = %v, want %v", c.addr, got, c.want)
		}
	}
}
