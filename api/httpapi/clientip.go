package httpapi

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/realclientip/realclientip-go"
)

// ClientIPs finds the address a request comes from: the connection's peer, unless that peer is
// one of the trusted proxies (FUNNEL_TRUSTED_PROXIES); then the rightmost address of
// X-Forwarded-For that is not itself a trusted proxy (the one the first trusted proxy saw; what
// a client writes further left is its own claim). From any other peer X-Forwarded-For is
// ignored: a client could write any address there.
type ClientIPs struct {
	trusted   []net.IPNet
	forwarded realclientip.Strategy // nil without trusted proxies
}

// ParseTrustedProxies reads FUNNEL_TRUSTED_PROXIES: comma-separated IP addresses and CIDR
// ranges ("10.0.0.0/8, 192.0.2.7"); empty trusts no proxy.
func ParseTrustedProxies(list string) ([]net.IPNet, error) {
	var items []string
	for item := range strings.SplitSeq(list, ",") {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	nets, err := realclientip.AddressesAndRangesToIPNets(items...)
	if err != nil {
		return nil, fmt.Errorf("httpapi: trusted proxies: %w", err)
	}
	return nets, nil
}

// NewClientIPs trusts X-Forwarded-For from the given proxies only.
func NewClientIPs(trusted []net.IPNet) ClientIPs {
	c := ClientIPs{trusted: trusted}
	if len(trusted) > 0 {
		c.forwarded = realclientip.Must(realclientip.NewRightmostTrustedRangeStrategy("X-Forwarded-For", trusted))
	}
	return c
}

// Of is the address the request comes from; the zero Addr when the connection has none (a
// Unix socket).
func (c ClientIPs) Of(r *http.Request) netip.Addr {
	peer := parseAddr(realclientip.RemoteAddrStrategy{}.ClientIP(nil, r.RemoteAddr))
	if c.forwarded == nil || !peer.IsValid() || !c.isTrusted(peer) {
		return peer
	}
	// Without the header, or with every address in it trusted, the client is the peer itself.
	if forwarded := parseAddr(c.forwarded.ClientIP(r.Header, r.RemoteAddr)); forwarded.IsValid() {
		return forwarded
	}
	return peer
}

func (c ClientIPs) isTrusted(addr netip.Addr) bool {
	ip := net.IP(addr.AsSlice())
	for _, n := range c.trusted {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// parseAddr reads an address as realclientip writes it, without its zone, an IPv4-mapped IPv6
// address as the IPv4 address it is.
func parseAddr(s string) netip.Addr {
	addr, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}
	}
	return addr.WithZone("").Unmap()
}
