package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// netLink is the network between the serve processes and one dependency (Redis,
// PostgreSQL): an in-process toxiproxy (its Go server package, no external binary)
// the processes connect through, on which the chaos schedule puts latency, resets
// and partitions.
type netLink struct {
	proxy *toxiproxy.Proxy
}

// newNetLink starts a proxy to upstream (host:port) on a free loopback port; the
// test's cleanup stops it.
func newNetLink(t *testing.T, name, upstream string) *netLink {
	t.Helper()
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		t.Fatalf("start the %s proxy: %v", name, err)
	}
	t.Cleanup(p.Stop)
	return &netLink{proxy: p}
}

// via returns rawURL with its host and port replaced by the proxy's.
func (l *netLink) via(rawURL string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", err
	}
	u.Host = l.proxy.Listen
	return u.String(), nil
}

// The faults a netLink injects.
const (
	// netLatency delays every byte both ways by 250 ms ± 150 ms.
	netLatency = "latency"
	// netReset resets every connection as soon as data flows (TCP RST).
	netReset = "reset_peer"
	// netPartition drops everything both ways, without closing anything.
	netPartition = "timeout"
)

// fault puts one fault on the link, both ways, for d, then heals it.
func (l *netLink) fault(kind string, d time.Duration) error {
	attrs := map[string]string{netLatency: `{"latency":250,"jitter":150}`, netReset: `{"timeout":0}`, netPartition: `{"timeout":0}`}[kind]
	var added []string
	var err error
	for _, stream := range []string{"upstream", "downstream"} {
		name := kind + "_" + stream
		body := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"toxicity":1,"attributes":%s}`, name, kind, stream, attrs)
		if _, err = l.proxy.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
			break
		}
		added = append(added, name)
	}
	if err == nil {
		time.Sleep(d)
	}
	for _, name := range added {
		err = errors.Join(err, l.proxy.Toxics.RemoveToxic(context.Background(), name))
	}
	return err
}
