package main

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// corsOrigins parses CORSOrigins: origins as a browser sends them in Origin —
// http or https, a host, a port if not the scheme's, nothing after — comma-separated.
func (c *Config) corsOrigins() ([]string, error) {
	var out []string
	for _, s := range strings.Split(c.CORSOrigins, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			u.Path != "" || u.RawQuery != "" || u.Fragment != "" || s != u.Scheme+"://"+u.Host || strings.ToLower(s) != s {
			return nil, fmt.Errorf("SECKILL_CORS_ORIGINS (--cors-origins): %q is not an origin like https://shop.example.com (lower case, no path)", s)
		}
		out = append(out, s)
	}
	return out, nil
}

// trustedProxies parses TrustedProxies: CIDRs, or single addresses, comma-separated.
func (c *Config) trustedProxies() ([]*net.IPNet, error) {
	var out []*net.IPNet
	for _, s := range strings.Split(c.TrustedProxies, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil || a.Zone() != "" {
				return nil, fmt.Errorf("SECKILL_TRUSTED_PROXIES (--trusted-proxies): %q is not a CIDR like 10.0.0.0/8 or an address", s)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		p = p.Masked()
		out = append(out, &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())})
	}
	return out, nil
}
