// Package turnstile is the ports.Challenge of Cloudflare Turnstile: the client renders
// the Turnstile widget with the settings Issue gives and sends the token it gets as
// its proof; Verify asks Cloudflare's siteverify whether the token is good.
//
// A token is bound to its voucher and user by the widget's cdata, "v<voucher>-u<user>",
// which Cloudflare signs into the token and siteverify answers back: a token solved for
// one user or voucher is refused for any other. The action is always Action. Tokens
// are single use: Cloudflare answers a second siteverify of one token
// "timeout-or-duplicate", on every instance alike.
package turnstile

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// DefaultURL is Cloudflare's siteverify endpoint.
const DefaultURL = "https://challenges.cloudflare.com/turnstile/v0/siteverify"

// Action is the widget's action every token of seckill carries.
const Action = "seckill_grab"

// DefaultTimeout bounds one siteverify call when Options.Timeout is 0.
const DefaultTimeout = 3 * time.Second

// maxToken is the longest token Turnstile issues (Cloudflare documents 2048
// characters); a longer proof is refused without asking.
const maxToken = 2048

// maxAnswer is the most of siteverify's answer read.
const maxAnswer = 64 << 10

// Options configure a Verifier.
type Options struct {
	// Secret is the widget's secret key, SiteKey its site key (given to clients).
	Secret, SiteKey string
	// URL is siteverify's; DefaultURL when empty.
	URL string
	// Timeout bounds one siteverify call; DefaultTimeout when 0.
	Timeout time.Duration
}

// Verifier is the Turnstile ports.Challenge.
type Verifier struct {
	opts   Options
	client *http.Client
}

var _ ports.Challenge = (*Verifier)(nil)

// New returns the Verifier of opts, with an HTTP client of its own.
func New(opts Options) *Verifier {
	if opts.URL == "" {
		opts.URL = DefaultURL
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	return &Verifier{opts: opts, client: &http.Client{
		Timeout: opts.Timeout,
		// siteverify answers itself; a redirect would carry the secret elsewhere.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// CData is the cdata that binds a token to user on voucher.
func CData(voucher domain.VoucherID, user domain.UserID) string {
	return "v" + voucher.String() + "-u" + user.String()
}

// Issue returns the widget's settings for user on voucher: the site key, Action and
// the cdata that binds the token. It keeps nothing, asks nothing of Cloudflare, and
// ignores difficulty (Cloudflare sets its own).
func (v *Verifier) Issue(_ context.Context, voucher domain.VoucherID, user domain.UserID, _ int) (ports.ChallengeOffer, error) {
	return ports.ChallengeOffer{SiteKey: v.opts.SiteKey, Action: Action, CData: CData(voucher, user)}, nil
}

// answer is what siteverify answers.
type answer struct {
	Success    bool     `json:"success"`
	ErrorCodes []string `json:"error-codes"`
	Action     string   `json:"action"`
	CData      string   `json:"cdata"`
}

// Verify asks siteverify about token (the proof) and accepts it only when Cloudflare
// says it is good and it carries Action and user's cdata on voucher. It returns
// domain.ErrChallengeRequired for a token that is missing, malformed, bad, spent,
// expired or bound to another user or voucher, and an error wrapping
// domain.ErrUnavailable when siteverify did not answer, answered something else than
// its JSON, or refused the secret (a setting to fix, not the user's fault).
func (v *Verifier) Verify(ctx context.Context, voucher domain.VoucherID, user domain.UserID, token string) error {
	if token == "" || len(token) > maxToken {
		return domain.ErrChallengeRequired
	}
	form := url.Values{"secret": {v.opts.Secret}, "response": {token}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, v.opts.URL, strings.NewReader(form.Encode()))
	if err != nil {
		return fmt.Errorf("turnstile siteverify: %w: %w", domain.ErrUnavailable, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := v.client.Do(req)
	if err != nil {
		return fmt.Errorf("turnstile siteverify: %w: %w", domain.ErrUnavailable, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("turnstile siteverify: %w: read the answer: %w", domain.ErrUnavailable, err)
	}
	var a answer
	if res.StatusCode != http.StatusOK || json.Unmarshal(body, &a) != nil {
		return fmt.Errorf("turnstile siteverify: %w: answered %d", domain.ErrUnavailable, res.StatusCode)
	}
	if !a.Success {
		for _, code := range []string{"missing-input-secret", "invalid-input-secret", "internal-error"} {
			if slices.Contains(a.ErrorCodes, code) {
				return fmt.Errorf("turnstile siteverify: %w: %s", domain.ErrUnavailable, code)
			}
		}
		return domain.ErrChallengeRequired
	}
	if a.Action != Action || a.CData != CData(voucher, user) {
		return domain.ErrChallengeRequired
	}
	return nil
}
