package webhooks

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"

	"github.com/funnelhq/funnel/domain"
)

// TargetPolicy is the SSRF guard: deliveries go only to public https targets. It is applied at
// subscribe time, to the URL and every address its host resolves to, and again at connect time,
// to the address actually dialled, so a host that re-resolves to a private address later (DNS
// rebinding) is refused too. AllowPrivate (FUNNEL_WEBHOOK_ALLOW_PRIVATE) lifts it, for
// development and tests.
type TargetPolicy struct {
	AllowPrivate bool
	Resolver     *net.Resolver
}

// notPublic are the special-purpose ranges of the IANA IPv4 and IPv6 registries that netip's
// predicates (loopback, private, link-local, multicast, unspecified) leave out: none of them is a
// public host a webhook may reach.
var notPublic = prefixes(
	"0.0.0.0/8",       // "this network"
	"100.64.0.0/10",   // carrier-grade NAT, where some clouds put metadata (100.100.100.200)
	"192.0.0.0/24",    // IETF protocol assignments
	"192.0.2.0/24",    // documentation
	"192.88.99.0/24",  // 6to4 relay anycast
	"198.18.0.0/15",   // benchmarking
	"198.51.100.0/24", // documentation
	"203.0.113.0/24",  // documentation
	"240.0.0.0/4",     // reserved, and broadcast
	"::/96",           // IPv4-compatible (deprecated): ::127.0.0.1 would be loopback
	"64:ff9b:1::/48",  // local-use NAT64
	"100::/64",        // discard
	"2001::/32",       // Teredo
	"2001:2::/48",     // benchmarking
	"2001:10::/28",    // ORCHID
	"2001:20::/28",    // ORCHIDv2
	"2001:db8::/32",   // documentation
	"fec0::/10",       // site-local (deprecated)
)

// An address of these translation prefixes reaches the IPv4 address inside it: that one decides.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

func prefixes(list ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(list))
	for i, p := range list {
		out[i] = netip.MustParsePrefix(p)
	}
	return out
}

// allowedAddr tells whether a webhook may be sent to an address.
func allowedAddr(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || !a.IsGlobalUnicast() || a.IsPrivate() || a.IsLoopback() || a.IsLinkLocalUnicast() {
		return false
	}
	for _, p := range notPublic {
		if p.Contains(a) {
			return false
		}
	}
	b := a.As16()
	switch {
	case nat64.Contains(a):
		return allowedAddr(netip.AddrFrom4([4]byte(b[12:16])))
	case sixToFour.Contains(a):
		return allowedAddr(netip.AddrFrom4([4]byte(b[2:6])))
	}
	return true
}

// CheckURL validates a target URL and returns it normalized. Refusals are domain.Invalid errors
// that say why.
func (p TargetPolicy) CheckURL(ctx context.Context, raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || (u.Scheme != "https" && u.Scheme != "http") {
		return "", domain.Invalid("url must be an absolute https URL without credentials")
	}
	if p.AllowPrivate {
		return u.String(), nil
	}
	if u.Scheme != "https" {
		return "", domain.Invalid("url must use https")
	}
	host := u.Hostname()
	if addr, err := netip.ParseAddr(host); err == nil {
		if !allowedAddr(addr) {
			return "", domain.Invalid("url must not point to a loopback, private, link-local or metadata address")
		}
		return u.String(), nil
	}
	resolver := p.Resolver
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	addrs, err := resolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return "", domain.Invalid("url host %q does not resolve", host)
	}
	for _, a := range addrs {
		if !allowedAddr(a) {
			return "", domain.Invalid("url host %q resolves to a loopback, private, link-local or metadata address", host)
		}
	}
	return u.String(), nil
}

// dialControl refuses, at connect time, any address the policy does not allow.
func (p TargetPolicy) dialControl(network, address string, _ syscall.RawConn) error {
	if p.AllowPrivate {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("webhooks: refusing to dial %q: %w", address, err)
	}
	if !allowedAddr(ap.Addr()) {
		return fmt.Errorf("webhooks: refusing to dial %s: not a public address", ap.Addr())
	}
	return nil
}
