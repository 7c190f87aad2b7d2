package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/domain"
)

// voucherCmd groups the admin's commands on vouchers. They call the API, as any
// admin's script would, so a change takes the one path every change takes — the same
// validation, the audit log, Redis and the database together — on whatever
// deployment the URL names.
type voucherCmd struct {
	Update voucherUpdateCmd `cmd:"" help:"Change a voucher's sale through the API: add or remove units, move its window, change its per-user limit or title. Prints the voucher as the change left it."`
}

type voucherUpdateCmd struct {
	URL string `name:"url" env:"SECKILL_URL" required:"" help:"The service's base URL, e.g. http://127.0.0.1:8080."`
	ID  string `name:"id" required:"" help:"The voucher's id."`

	AddUnits     *int    `name:"add-units" help:"Put this many more units on sale."`
	RemoveUnits  *int    `name:"remove-units" help:"Take this many units still on sale off it."`
	BeginsAt     *string `name:"begins-at" help:"Move the start (RFC 3339), only while the sale has not started."`
	EndsAt       *string `name:"ends-at" help:"Move the end (RFC 3339); now or earlier ends the sale at once."`
	PerUserLimit *int    `name:"per-user-limit" help:"Units one user may hold."`
	Title        *string `name:"title" help:"The voucher's title."`

	As             string `name:"as" default:"1" help:"The admin's user id the request is made as (the audit log's actor)."`
	IdempotencyKey string `name:"idempotency-key" help:"The request's Idempotency-Key; unset, a random one, so the retries of this run apply the change once."`
	JWTSecret      string `name:"jwt-secret" env:"SECKILL_JWT_SECRET" help:"HS256 secret (the server's): the admin's token is minted with it."`
}

// Validate checks the flags before Run (kong calls it; a failure exits 2). The values
// themselves are the server's to judge.
func (c *voucherUpdateCmd) Validate() error {
	if _, err := domain.ParseVoucherID(c.ID); err != nil {
		return fmt.Errorf("--id: %q is not a positive integer", c.ID)
	}
	if _, err := domain.ParseUserID(c.As); err != nil {
		return fmt.Errorf("--as: %q is not a positive integer", c.As)
	}
	if c.AddUnits == nil && c.RemoveUnits == nil && c.BeginsAt == nil && c.EndsAt == nil && c.PerUserLimit == nil && c.Title == nil {
		return errors.New("name a change: --add-units, --remove-units, --begins-at, --ends-at, --per-user-limit or --title")
	}
	if len(c.JWTSecret) < minSecretLen {
		return fmt.Errorf("SECKILL_JWT_SECRET (--jwt-secret): must be at least %d bytes", minSecretLen)
	}
	return nil
}

// updateAttempts bounds how often Run sends the change while the answer is 503 or
// none comes; every attempt carries the same Idempotency-Key.
const updateAttempts = 5

// Run sends PATCH /api/v1/vouchers/{id} as the admin --as, under an Idempotency-Key,
// again while the service answers 503 (after its Retry-After) or not at all, and
// prints the voucher it answers. Any other answer is an error naming its status and
// code.
func (c *voucherUpdateCmd) Run(ctx context.Context) error {
	body, err := json.Marshal(c.changes())
	if err != nil {
		return err
	}
	user, _ := domain.ParseUserID(c.As)
	token, err := httpapi.NewTokens([]byte(c.JWTSecret)).Mint(user, true, 5*time.Minute)
	if err != nil {
		return err
	}
	key := c.IdempotencyKey
	if key == "" {
		var b [16]byte
		_, _ = rand.Read(b[:])
		key = "cli-" + hex.EncodeToString(b[:])
	}
	url := strings.TrimRight(c.URL, "/") + "/api/v1/vouchers/" + c.ID
	client := &http.Client{Timeout: 10 * time.Second}
	var last error
	for range updateAttempts {
		status, answer, wait, err := patchOnce(ctx, client, url, token, key, body)
		switch {
		case err == nil && status == http.StatusOK:
			_, err := os.Stdout.Write(answer)
			return err
		case err == nil && status != http.StatusServiceUnavailable:
			return answerError(status, answer)
		case err == nil:
			last = answerError(status, answer)
		default:
			last = err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
	return fmt.Errorf("%w (gave up after %d attempts)", last, updateAttempts)
}

// changes is the request's body: the flags given.
func (c *voucherUpdateCmd) changes() map[string]any {
	out := map[string]any{}
	set := func(name string, given bool, v func() any) {
		if given {
			out[name] = v()
		}
	}
	set("add_units", c.AddUnits != nil, func() any { return *c.AddUnits })
	set("remove_units", c.RemoveUnits != nil, func() any { return *c.RemoveUnits })
	set("begins_at", c.BeginsAt != nil, func() any { return *c.BeginsAt })
	set("ends_at", c.EndsAt != nil, func() any { return *c.EndsAt })
	set("per_user_limit", c.PerUserLimit != nil, func() any { return *c.PerUserLimit })
	set("title", c.Title != nil, func() any { return *c.Title })
	return out
}

// patchOnce sends the change once and returns the answer's status and body and how
// long to wait before another attempt (its Retry-After, or a second).
func patchOnce(ctx context.Context, client *http.Client, url, token, key string, body []byte) (int, []byte, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(httpapi.IdempotencyKeyHeader, key)
	res, err := client.Do(req)
	if err != nil {
		return 0, nil, time.Second, fmt.Errorf("PATCH %s: %w", url, err)
	}
	defer res.Body.Close()
	answer, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, nil, time.Second, fmt.Errorf("PATCH %s: %w", url, err)
	}
	wait := time.Second
	if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && s > 0 {
		wait = min(time.Duration(s)*time.Second, 10*time.Second)
	}
	return res.StatusCode, answer, wait, nil
}

// answerError describes an answer that is not the voucher: its status, and the error
// object's code and message when it has one.
func answerError(status int, body []byte) error {
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error.Code == "" {
		return fmt.Errorf("the service answered %d: %q", status, bytes.TrimSpace(body))
	}
	return fmt.Errorf("the service answered %d %s: %s", status, e.Error.Code, e.Error.Message)
}
