// Package burst fires a flash-sale burst at a seckill API: one connection per request,
// all opened first, then every request sent at the same instant. It is what the burst
// tests and benchmarks use to reproduce the moment a sale opens, on loopback.
package burst

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/seckill/seckill/cmd/internal/load"
)

// Request is one grab to send.
type Request struct {
	// Path is the request path, e.g. /api/v1/vouchers/1/grab.
	Path string
	// Token is the bearer token.
	Token string
	// Body is the JSON body; empty sends none.
	Body string
}

// Result is one answer.
type Result struct {
	Status int
	// Code is the error code of a 4xx/5xx answer.
	Code string
	// OrderID is the order a 202 or an already_purchased answer names.
	OrderID string
	// Latency runs from the burst's start to the last byte of the answer.
	Latency time.Duration
	// Err is a transport failure (no answer).
	Err error
}

// Options tune a burst.
type Options struct {
	// DialParallelism bounds how many connections are being opened at once, so the
	// server's accept queue never overflows before the burst starts. Default 64.
	DialParallelism int
	// Timeout bounds each request after the start. Default 30s.
	Timeout time.Duration
}

// Fire opens one connection per request to base (http://host:port), waits until all
// are open, then writes every request at once and reads the answers. It returns the
// results in request order and the time from the start until the last answer.
func Fire(ctx context.Context, base string, reqs []Request, opts Options) ([]Result, time.Duration, error) {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return nil, 0, fmt.Errorf("base url %q: want http://host:port", base)
	}
	if opts.DialParallelism <= 0 {
		opts.DialParallelism = 64
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	conns, err := dialAll(ctx, u.Host, len(reqs), opts.DialParallelism)
	if err != nil {
		return nil, 0, err
	}
	results := make([]Result, len(reqs))
	start := make(chan struct{})
	var began time.Time
	var wg sync.WaitGroup
	for i := range reqs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer conns[i].Close()
			<-start
			results[i] = send(conns[i], u.Host, reqs[i], began, opts.Timeout)
		}(i)
	}
	began = time.Now()
	close(start)
	wg.Wait()
	return results, time.Since(began), nil
}

func dialAll(ctx context.Context, host string, n, parallel int) ([]net.Conn, error) {
	conns := make([]net.Conn, n)
	errs := make(chan error, n)
	sem := make(chan struct{}, parallel)
	var d net.Dialer
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			c, err := d.DialContext(ctx, "tcp", host)
			if err != nil {
				errs <- err
				return
			}
			conns[i] = c
		}(i)
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		for _, c := range conns {
			if c != nil {
				_ = c.Close()
			}
		}
		return nil, fmt.Errorf("open connections: %w", err)
	}
	return conns, nil
}

func send(c net.Conn, host string, r Request, began time.Time, timeout time.Duration) Result {
	if err := c.SetDeadline(began.Add(timeout)); err != nil {
		return Result{Err: err}
	}
	req := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		r.Path, host, r.Token, len(r.Body), r.Body)
	if _, err := io.WriteString(c, req); err != nil {
		return Result{Err: err}
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return Result{Err: err}
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	out := Result{Status: res.StatusCode, Latency: time.Since(began), Err: err}
	out.Code, out.OrderID = load.DecodeGrab(body)
	return out
}
