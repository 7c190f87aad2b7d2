package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/system"
	"github.com/seckill/seckill/domain"
)

// createPowVoucher makes a voucher on sale now whose grabs need a proof of work of
// difficulty bits, and returns its id.
func (a *api) createPowVoucher(stock, difficulty int) string {
	a.t.Helper()
	now := time.Now().UTC()
	body, _ := json.Marshal(map[string]any{
		"title": "Coffee", "stock": stock, "challenge": "pow", "pow_difficulty": difficulty,
		"begins_at": now.Add(-time.Minute), "ends_at": now.Add(time.Hour),
	})
	r := a.do(http.MethodPost, "/api/v1/vouchers", a.admin, string(body))
	if r.Status != http.StatusCreated || r.Body["challenge"] != "pow" {
		a.t.Fatalf("create a voucher with a challenge: %d %s", r.Status, r.Raw)
	}
	return r.Body["id"].(string)
}

// GET …/challenge hands a user a challenge of the voucher's difficulty, bound to that
// user and voucher; a voucher without a challenge has none (404), and only a signed-in
// user gets one.
func TestChallengeIsIssuedForAVoucherWithOne(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	id := a.createPowVoucher(5, 9)
	user := a.token(5, false)
	r := a.do(http.MethodGet, "/api/v1/vouchers/"+id+"/challenge", user, "")
	if r.Status != http.StatusOK || r.Body["difficulty"] != 9.0 {
		t.Fatalf("GET challenge: %d %s, want 200 with difficulty 9", r.Status, r.Raw)
	}
	challenge, _ := r.Body["challenge"].(string)
	expires, err := time.Parse(time.RFC3339Nano, r.Body["expires_at"].(string))
	if err != nil || len(challenge) != 23 || expires.Before(time.Now().Add(time.Minute)) || expires.After(time.Now().Add(3*time.Minute)) {
		t.Fatalf("challenge %q expiring %v (%v): want 23 characters good for about 2 minutes", challenge, expires, err)
	}
	vid, _ := domain.ParseVoucherID(id)
	proofs := redisstore.NewProofOfWork(a.redis, redisstore.Options{Prefix: a.stock.Keys().Prefix}, system.Clock{})
	proof := challenge + ":" + domain.SolvePow(challenge, 9)
	if err := proofs.Verify(context.Background(), vid, 6, proof); !errors.Is(err, domain.ErrChallengeRequired) {
		t.Fatalf("the challenge answered by another user: %v, want refused", err)
	}
	if err := proofs.Verify(context.Background(), vid, 5, proof); err != nil {
		t.Fatalf("the challenge answered by its user: %v", err)
	}

	plain := a.createVoucher(5, 1)
	for _, tc := range []struct {
		path, token string
		status      int
		code        string
	}{
		{"/api/v1/vouchers/" + plain + "/challenge", user, http.StatusNotFound, "not_found"},
		{"/api/v1/vouchers/999999/challenge", user, http.StatusNotFound, "not_found"},
		{"/api/v1/vouchers/abc/challenge", user, http.StatusBadRequest, "invalid_request"},
		{"/api/v1/vouchers/" + id + "/challenge", "", http.StatusUnauthorized, "unauthorized"},
	} {
		if r := a.do(http.MethodGet, tc.path, tc.token, ""); r.Status != tc.status || r.code() != tc.code {
			t.Errorf("GET %s: %d %s, want %d %s", tc.path, r.Status, r.Raw, tc.status, tc.code)
		}
	}
}

// A grab of a sale with a proof of work: refused without a proof with a challenge to
// answer in the error; taken with the answer; the answer is the user's alone (another
// user's grab with it is refused and spends nothing) and good once.
func TestGrabWithTheChallengeOfItsRefusal(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	id := a.createPowVoucher(5, 8)
	grab := "/api/v1/vouchers/" + id + "/grab"
	alice, bob := a.token(21, false), a.token(22, false)
	r := a.do(http.MethodPost, grab, alice, "")
	e, _ := r.Body["error"].(map[string]any)
	challenge, _ := e["challenge"].(string)
	if r.Status != http.StatusForbidden || r.code() != "challenge_required" || challenge == "" || e["difficulty"] != 8.0 || e["expires_at"] == nil {
		t.Fatalf("a grab without a proof: %d %s, want 403 challenge_required with a challenge of 8 bits", r.Status, r.Raw)
	}
	proof := challenge + ":" + domain.SolvePow(challenge, 8)
	for i, tc := range []struct {
		token  string
		status int
	}{{bob, http.StatusForbidden}, {alice, http.StatusAccepted}, {alice, http.StatusForbidden}} {
		r := a.serveFrom(http.MethodPost, grab, tc.token, "", "192.0.2.1:1", "X-Seckill-Pow", proof)
		if r.Status != tc.status {
			t.Fatalf("grab %d with the proof: %d %s, want %d", i, r.Status, r.Raw, tc.status)
		}
	}
	if got := a.remaining(id); got != 4 {
		t.Fatalf("remaining %v, want 4: one grab taken", got)
	}
}
