package api

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// ClientAddresses says how the server tells one client from another for the budgets it
// keeps per client (failed authentications, sign-ins, registrations, account-free
// operations): by the connection's remote address, or, when that address is one of
// TrustedProxies, by the address the proxy reports in Header. A header is believed only
// from a configured proxy: from anyone else it is the client's own claim, and a client
// could give itself a fresh budget per request.
type ClientAddresses struct {
	// TrustedProxies are the reverse proxies (addresses or CIDR prefixes) whose Header
	// is believed. None: the remote address is the client, header or not.
	TrustedProxies []netip.Prefix
	// Header carries the client address a trusted proxy saw (default X-Forwarded-For).
	// X-Forwarded-For is read from the right, skipping trusted proxies: the first other
	// address is the one the nearest trusted proxy was connected from. A header of one
	// address (X-Real-IP, CF-Connecting-IP) is taken as it is.
	Header string
}

// ParseTrustedProxies reads a comma-separated list of addresses and CIDR prefixes.
func ParseTrustedProxies(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if p, err := netip.ParsePrefix(f); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("%q is neither an address nor a CIDR prefix", f)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

func (a ClientAddresses) trusted(ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, p := range a.TrustedProxies {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// client returns the address of the client of a request from remote, whose headers
// header reads.
func (a ClientAddresses) client(remote net.IP, header func(string) string) net.IP {
	addr, ok := netip.AddrFromSlice(remote)
	if !ok || len(a.TrustedProxies) == 0 || !a.trusted(addr) {
		return remote
	}
	name := a.Header
	if name == "" {
		name = fiber.HeaderXForwardedFor
	}
	hops := strings.Split(header(name), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return remote // a header the proxy did not write as it should: the proxy is the client
		}
		if !a.trusted(hop) || i == 0 {
			return net.IP(hop.Unmap().AsSlice())
		}
	}
	return remote
}

// clientOf names the budget of the client of a Fiber request (clientAddress of its
// address).
func (s *Server) clientOf(c *fiber.Ctx) string {
	return clientAddress(s.cfg.ClientAddresses.client(c.Context().RemoteIP(), func(h string) string { return c.Get(h) }))
}

// clientOfHTTP is clientOf for a request served through the net/http adaptor.
func (s *Server) clientOfHTTP(r *http.Request) string {
	return clientAddress(s.cfg.ClientAddresses.client(remoteIP(r), r.Header.Get))
}

// clientAddress names the budget of a client: its IPv4 address, or the /64 of its IPv6
// address (a subscriber's usual allocation: one client cannot give itself a budget per
// address).
func clientAddress(ip net.IP) string {
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}
