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
// rebinding) is refused too. publicAddr says which addresses are public. AllowPrivate (FUNNEL_WEBHOOK_ALLOW_PRIVATE) lifts it, for
// development and tests.
type TargetPolicy struct {
	AllowPrivate bool
	Resolver     *net.Resolver
}

// CheckURL validates a target URL and returns it normalized. Refusals are domain.Invalid errors
// that say why.
func (p TargetPolicy) CheckURL(ctx context.Context, raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || (u.Scheme != "https" && u.Scheme != "http") {
		return "", domain.InvalidField("url", "url must be an absolute https URL without credentials")
	}
	if p.AllowPrivate {
		return u.String(), nil
	}
	if u.Scheme != "https" {
		return "", domain.InvalidField("url", "url must use https")
	}
	host := u.Hostname()
	if addr, err := netip.ParseAddr(host); err == nil {
		if !publicAddr(addr) {
			return "", domain.InvalidField("url", "url must not point to a loopback, private, link-local or metadata address")
		}
		return u.String(), nil
	}
	resolver := p.Resolver
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	addrs, err := resolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return "", domain.InvalidField("url", "url host %q does not resolve", host)
	}
	for _, a := range addrs {
		if !publicAddr(a) {
			return "", domain.InvalidField("url", "url host %q resolves to a loopback, private, link-local or metadata address", host)
		}
	}
	return u.String(), nil
}

// refusalAtSend says why a delivery to rawURL may not be sent under the policy, or "" when it may.
// A subscription keeps the URL it was made with: one made while private targets were allowed
// (FUNNEL_WEBHOOK_ALLOW_PRIVATE=true) may still hold an http:// URL once they no longer are, so
// the scheme is checked again before every attempt. The address is checked again by the dialer
// (dialControl), on the address actually dialled.
func (p TargetPolicy) refusalAtSend(rawURL string) string {
	if p.AllowPrivate {
		return ""
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return "invalid target url"
	}
	if u.Scheme != "https" {
		return "refused: the target url is not https, and only https targets are allowed (FUNNEL_WEBHOOK_ALLOW_PRIVATE is off)"
	}
	return ""
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
	if !publicAddr(ap.Addr()) {
		return fmt.Errorf("webhooks: refusing to dial %s: not a public address", ap.Addr())
	}
	return nil
}
