package turnstile_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/seckill/seckill/adapters/turnstile"
	"github.com/seckill/seckill/domain"
)

const secret = "0x4AAAAAAAtest-secret"

// fakeSiteverify plays Cloudflare's siteverify: it knows the tokens it issued, each
// with the action and cdata the widget was rendered with, answers each one good once
// ("timeout-or-duplicate" after), and refuses a wrong secret as Cloudflare does.
type fakeSiteverify struct {
	mu     sync.Mutex
	tokens map[string][2]string // token → action, cdata
	spent  map[string]bool
	// asked records the form of every call.
	asked []map[string]string
	// status, when set, is answered instead (an outage).
	status int
}

func newFake(t *testing.T) (*fakeSiteverify, string) {
	f := &fakeSiteverify{tokens: map[string][2]string{}, spent: map[string]bool{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

// solve is the widget solved for action and cdata: the token it hands the page.
func (f *fakeSiteverify) solve(token, action, cdata string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tokens[token] = [2]string{action, cdata}
	return token
}

func (f *fakeSiteverify) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" || r.ParseForm() != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	f.asked = append(f.asked, map[string]string{"secret": r.PostForm.Get("secret"), "response": r.PostForm.Get("response")})
	if f.status != 0 {
		w.WriteHeader(f.status)
		return
	}
	answer := map[string]any{"success": false, "error-codes": []string{}}
	token := r.PostForm.Get("response")
	bound, known := f.tokens[token]
	switch {
	case r.PostForm.Get("secret") != secret:
		answer["error-codes"] = []string{"invalid-input-secret"}
	case !known:
		answer["error-codes"] = []string{"invalid-input-response"}
	case f.spent[token]:
		answer["error-codes"] = []string{"timeout-or-duplicate"}
	default:
		f.spent[token] = true
		answer = map[string]any{"success": true, "error-codes": []string{}, "action": bound[0], "cdata": bound[1],
			"hostname": "shop.example", "challenge_ts": "2026-12-01T21:00:00.000Z"}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(answer)
}

// A token is good once, for the user and voucher its cdata names, with seckill's
// action; the site key and the binding are what Issue hands the client.
func TestTurnstileVerifiesBoundSingleUseTokens(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	fake, url := newFake(t)
	v := turnstile.New(turnstile.Options{Secret: secret, SiteKey: "0x4AAAAAAAsitekey", URL: url})
	offer, err := v.Issue(ctx, 7, 42, 16)
	if err != nil {
		t.Fatal(err)
	}
	if offer.SiteKey != "0x4AAAAAAAsitekey" || offer.Action != turnstile.Action || offer.CData != "v7-u42" || offer.Challenge != "" {
		t.Fatalf("Issue = %+v, want the site key, action %q and cdata v7-u42", offer, turnstile.Action)
	}
	good := fake.solve("tok-good", offer.Action, offer.CData)
	refused := map[string]struct {
		voucher domain.VoucherID
		user    domain.UserID
		token   string
	}{
		"another user's":      {7, 43, fake.solve("tok-1", turnstile.Action, "v7-u42")},
		"for another voucher": {7, 42, fake.solve("tok-2", turnstile.Action, "v8-u42")},
		"of another action":   {7, 42, fake.solve("tok-3", "login", "v7-u42")},
		"unknown":             {7, 42, "tok-forged"},
		"empty":               {7, 42, ""},
		"too long":            {7, 42, strings.Repeat("x", 2049)},
	}
	for name, tc := range refused {
		if err := v.Verify(ctx, tc.voucher, tc.user, tc.token); !errors.Is(err, domain.ErrChallengeRequired) {
			t.Errorf("a token %s: %v, want ErrChallengeRequired", name, err)
		}
	}
	// The one token used by its user on the wrong voucher: Cloudflare spent it.
	if err := v.Verify(ctx, 8, 42, good); !errors.Is(err, domain.ErrChallengeRequired) {
		t.Fatalf("the token for another voucher: %v, want ErrChallengeRequired", err)
	}
	good = fake.solve("tok-good-2", offer.Action, offer.CData)
	if err := v.Verify(ctx, 7, 42, good); err != nil {
		t.Fatalf("the user's token: %v, want nil", err)
	}
	if err := v.Verify(ctx, 7, 42, good); !errors.Is(err, domain.ErrChallengeRequired) {
		t.Fatalf("the token again: %v, want ErrChallengeRequired (timeout-or-duplicate)", err)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	// Empty and over-long tokens are refused without asking Cloudflare.
	if len(fake.asked) != len(refused)-2+3 {
		t.Fatalf("siteverify was asked %d times, want %d", len(fake.asked), len(refused)-2+3)
	}
	for _, form := range fake.asked {
		if form["secret"] != secret {
			t.Fatalf("siteverify was sent secret %q", form["secret"])
		}
	}
}

// A siteverify that is down, answers garbage, or refuses the secret makes Verify
// unavailable (503: retry, or fix the setting), not a refusal of the user.
func TestTurnstileUnavailable(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	fake, url := newFake(t)
	token := fake.solve("tok", turnstile.Action, "v1-u1")
	wrongSecret := turnstile.New(turnstile.Options{Secret: "nope", URL: url})
	if err := wrongSecret.Verify(ctx, 1, 1, token); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("a refused secret: %v, want ErrUnavailable", err)
	}
	fake.mu.Lock()
	fake.status = http.StatusBadGateway
	fake.mu.Unlock()
	v := turnstile.New(turnstile.Options{Secret: secret, URL: url})
	if err := v.Verify(ctx, 1, 1, token); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("siteverify answering 502: %v, want ErrUnavailable", err)
	}
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("<html>")) }))
	t.Cleanup(garbage.Close)
	if err := turnstile.New(turnstile.Options{Secret: secret, URL: garbage.URL}).Verify(ctx, 1, 1, token); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("siteverify answering HTML: %v, want ErrUnavailable", err)
	}
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for name, v := range map[string]*turnstile.Verifier{
		"down":      turnstile.New(turnstile.Options{Secret: secret, URL: down.URL}),
		"cancelled": v,
	} {
		c := ctx
		if name == "cancelled" {
			c = cancelled
		}
		if err := v.Verify(c, 1, 1, token); !errors.Is(err, domain.ErrUnavailable) {
			t.Fatalf("siteverify %s: %v, want ErrUnavailable", name, err)
		}
	}
}
