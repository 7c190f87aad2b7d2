package load

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/seckill/seckill/adapters/httpapi"
)

// The calls around a flash sale: health, voucher and stats, per the HTTP contract.

// adminClient is the client of the calls around a sale; each call also carries its
// own deadline.
var adminClient = &http.Client{Timeout: 10 * time.Second}

// Healthy checks that a seckill answers GET /healthz at base within timeout. Its
// error is one line naming base.
func Healthy(ctx context.Context, base string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/healthz", nil)
	if err != nil {
		return fmt.Errorf("%s: %w", base, err)
	}
	res, err := adminClient.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("no seckill answers at %s: GET /healthz got no answer within %v", base, timeout)
		}
		return fmt.Errorf("no seckill answers at %s: %v", base, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s is not a healthy seckill: GET /healthz answered %d", base, res.StatusCode)
	}
	return nil
}

// ErrStopped is WaitReady's error when the service stopped before it was ready.
var ErrStopped = errors.New("stopped before it was ready")

// WaitReady polls GET /readyz at base until it answers 200. It returns an error when
// timeout passes first, when ctx ends, or, wrapping ErrStopped, when stopped is closed
// (the service exited).
func WaitReady(ctx context.Context, base string, timeout time.Duration, stopped <-chan struct{}) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/readyz", nil)
		if err != nil {
			return err
		}
		if res, err := client.Do(req); err == nil {
			_ = res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready within %v", timeout)
		}
		select {
		case <-stopped:
			return ErrStopped
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Voucher is the contract's voucher.
type Voucher = httpapi.VoucherJSON

// NewVoucher is the body of POST /api/v1/vouchers.
type NewVoucher struct {
	Title        string    `json:"title"`
	Stock        int       `json:"stock"`
	BeginsAt     time.Time `json:"begins_at"`
	EndsAt       time.Time `json:"ends_at"`
	PerUserLimit int       `json:"per_user_limit"`
}

// CreateVoucher creates a voucher with an admin token.
func CreateVoucher(ctx context.Context, base, adminToken string, v NewVoucher) (Voucher, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return Voucher{}, err
	}
	var out Voucher
	err = call(ctx, http.MethodPost, strings.TrimRight(base, "/")+"/api/v1/vouchers", adminToken, body, http.StatusCreated, "create voucher", &out)
	return out, err
}

// GetVoucher reads a voucher.
func GetVoucher(ctx context.Context, base, id string) (Voucher, error) {
	var out Voucher
	err := call(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/api/v1/vouchers/"+url.PathEscape(id), "", nil, http.StatusOK, "voucher "+id, &out)
	return out, err
}

// Stats are a voucher's units by state, from GET /api/v1/vouchers/{id}/stats.
type Stats struct {
	httpapi.StatsJSON
}

// Persisted is the number of units in persisted live orders (awaiting payment or paid).
func (s Stats) Persisted() int { return s.AwaitingPayment + s.Paid }

// GetStats reads a voucher's stats with an admin token.
func GetStats(ctx context.Context, base, voucher, adminToken string) (Stats, error) {
	var out Stats
	err := call(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/api/v1/vouchers/"+url.PathEscape(voucher)+"/stats", adminToken, nil, http.StatusOK, "stats of voucher "+voucher, &out)
	return out, err
}

// Persistence is what WaitPersisted saw.
type Persistence struct {
	// Took runs from the call to the moment the orders were persisted (or to the
	// timeout).
	Took time.Duration
	// Orders is awaiting_payment+paid at the end.
	Orders int
	// Stats are the last stats read.
	Stats Stats
}

// The errors of WaitPersisted that still come with what it saw: ErrNotPersisted when
// the stats said the orders were not all persisted in time, ErrNoStats when the last
// attempt to read them failed (the service stopped answering, say), so nobody knows.
var (
	ErrNotPersisted = errors.New("orders not persisted in time")
	ErrNoStats      = errors.New("stats not readable")
)

// pollEvery is how often WaitPersisted reads the stats.
const pollEvery = 25 * time.Millisecond

// WaitPersisted polls the voucher's stats until awaiting_payment+paid reaches want
// (passing it ends the wait too: the report shows the excess) with no reservation
// pending, and returns how long that took. After timeout it returns the last count
// seen and an error wrapping ErrNotPersisted, or ErrNoStats when the last stats call
// failed; a failing stats call is retried until then, but a refused one (4xx) ends the
// wait at once. A timeout of 0 reads the stats once. Each call has its own deadline
// (a call in flight when the timeout passes is let finish), so a slow machine still
// gets an answer to report.
func WaitPersisted(ctx context.Context, base, voucher, adminToken string, want int, timeout time.Duration) (Persistence, error) {
	start := time.Now()
	deadline := start.Add(timeout)
	var last Persistence
	var lastErr error
	for {
		s, err := GetStats(ctx, base, voucher, adminToken)
		if refused(err) {
			return last, err
		}
		if err == nil {
			last = Persistence{Took: time.Since(start), Orders: s.Persisted(), Stats: s}
			lastErr = nil
			if s.Persisted() >= want && s.Pending == 0 && s.Queued == 0 {
				return last, nil
			}
		} else {
			lastErr = err
		}
		if ctx.Err() != nil {
			return last, ctx.Err()
		}
		if time.Now().Add(pollEvery).After(deadline) {
			last.Took = time.Since(start)
			if lastErr != nil {
				return last, fmt.Errorf("%w within %v: %v", ErrNoStats, timeout.Round(time.Millisecond), lastErr)
			}
			return last, fmt.Errorf("%w after %v: %d of %d orders persisted (queued %d, pending %d, failed %d)",
				ErrNotPersisted, timeout.Round(time.Millisecond), last.Orders, want, last.Stats.Queued, last.Stats.Pending, last.Stats.Failed)
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(pollEvery):
		}
	}
}

// call sends one admin call and decodes a wantStatus answer into out.
func call(ctx context.Context, method, u, token string, body []byte, wantStatus int, what string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := adminClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer res.Body.Close()
	if res.StatusCode != wantStatus {
		return apiError(what, res)
	}
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		return fmt.Errorf("%s: decode answer: %w", what, err)
	}
	return nil
}
