package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/domain"
)

// createGated makes a voucher on sale now with the admission and challenge given, and
// returns its id.
func (a *api) createGated(stock int, admission domain.Admission, challenge domain.ChallengeKind) domain.VoucherID {
	a.t.Helper()
	now := time.Now().UTC()
	body, _ := json.Marshal(map[string]any{
		"title": "Gated", "stock": stock, "per_user_limit": 1,
		"begins_at": now.Add(-time.Minute), "ends_at": now.Add(time.Hour),
		"admission": admission, "challenge": challenge,
	})
	r := a.do(http.MethodPost, "/api/v1/vouchers", a.admin, string(body))
	if r.Status != http.StatusCreated {
		a.t.Fatalf("create voucher: %d %s", r.Status, r.Raw)
	}
	id, err := domain.ParseVoucherID(r.Body["id"].(string))
	if err != nil {
		a.t.Fatal(err)
	}
	return id
}

// admit gives user a pass of voucher id as the waiting room does (its member of the
// passes set) and returns the pass's token, signed with key.
func (a *api) admit(id domain.VoucherID, user domain.UserID, expires time.Time, key []byte) string {
	a.t.Helper()
	p := domain.Pass{Voucher: id, User: user, Expires: expires}
	err := a.redis.ZAdd(context.Background(), a.stock.Keys().Passes(id), redis.Z{Score: float64(expires.UnixMilli()), Member: user.String()}).Err()
	if err != nil {
		a.t.Fatal(err)
	}
	return domain.SignPass(key, p)
}

// respell returns token with the lowest bit of its last character's value flipped:
// one of its padding bits, so a loose base64url decoder reads the same bytes.
func respell(token string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	last := strings.IndexByte(alphabet, token[len(token)-1])
	return token[:len(token)-1] + string(alphabet[last^1])
}

// grabWith grabs voucher id as token's user with header's name, value pairs.
func (a *api) grabWith(id domain.VoucherID, token string, header ...string) response {
	a.t.Helper()
	return a.serveFrom(http.MethodPost, "/api/v1/vouchers/"+id.String()+"/grab", token, "", "192.0.2.1:1234", header...)
}

func TestGrabAWaitingRoomNeedsAPass(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	id := a.createGated(5, domain.AdmissionWaitingRoom, domain.ChallengeNone)
	other := a.createGated(5, domain.AdmissionWaitingRoom, domain.ChallengeNone)
	const user domain.UserID = 20
	tok := a.token(user, false)
	later := time.Now().Add(domain.PassLifetime)
	// Another user's and another voucher's passes, each outstanding where it belongs.
	borrowed := a.admit(id, 21, later, a.passKey)
	elsewhere := a.admit(other, user, later, a.passKey)

	refused := map[string][]string{
		"no pass":                 nil,
		"an empty pass":           {httpapi.PassHeader, ""},
		"a malformed pass":        {httpapi.PassHeader, "not-a-pass"},
		"a forged pass":           {httpapi.PassHeader, a.admit(id, user, later, []byte("another key"))},
		"an expired pass":         {httpapi.PassHeader, a.admit(id, user, time.Now().Add(-time.Second), a.passKey)},
		"another user's pass":     {httpapi.PassHeader, borrowed},
		"another voucher's pass":  {httpapi.PassHeader, elsewhere},
		"a pass never given here": {httpapi.PassHeader, domain.SignPass(a.passKey, domain.Pass{Voucher: id, User: user, Expires: later.Add(time.Second)})},
		// The user's own pass (below), its last character changed in its padding
		// bits only: the same bytes, but not the token the service issued.
		"the user's pass respelt": {httpapi.PassHeader, respell(domain.SignPass(a.passKey, domain.Pass{Voucher: id, User: user, Expires: later}))},
	}
	// The user's own pass, admitted last: the forged and expired ones above replaced
	// the user's member each time.
	pass := a.admit(id, user, later, a.passKey)
	for name, header := range refused {
		r := a.grabWith(id, tok, header...)
		if r.Status != http.StatusForbidden || r.code() != "queue_required" {
			t.Errorf("grab with %s: %d %s, want 403 queue_required", name, r.Status, r.Raw)
		}
	}
	if got := a.streamLen(id.String()); got != 0 {
		t.Fatalf("refused grabs queued %d reservations, want none", got)
	}

	r := a.grabWith(id, tok, httpapi.PassHeader, pass)
	if r.Status != http.StatusAccepted {
		t.Fatalf("grab with the user's pass: %d %s", r.Status, r.Raw)
	}
	// Used: a replay is refused, not answered already_purchased.
	if r := a.grabWith(id, tok, httpapi.PassHeader, pass); r.Status != http.StatusForbidden || r.code() != "queue_required" {
		t.Fatalf("replayed pass: %d %s, want 403 queue_required", r.Status, r.Raw)
	}
	if got, want := a.remaining(id.String()), 4.0; got != want {
		t.Fatalf("remaining = %v, want %v", got, want)
	}
	if got := a.streamLen(id.String()); got != 1 {
		t.Fatalf("stream holds %d reservations, want 1", got)
	}
	// User 21's pass was not used up by the attempt with it.
	if r := a.grabWith(id, a.token(21, false), httpapi.PassHeader, borrowed); r.Status != http.StatusAccepted {
		t.Fatalf("grab with user 21's own pass: %d %s", r.Status, r.Raw)
	}
}

func TestGrabFirstComeWithAPass(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	id := a.createGated(5, domain.AdmissionFirstCome, domain.ChallengeNone)
	tok := a.token(30, false)
	// A forged pass is refused wherever it is sent; a valid one changes nothing.
	forged := domain.SignPass([]byte("another key"), domain.Pass{Voucher: id, User: 30, Expires: time.Now().Add(time.Minute)})
	if r := a.grabWith(id, tok, httpapi.PassHeader, forged); r.Status != http.StatusForbidden || r.code() != "queue_required" {
		t.Fatalf("first come with a forged pass: %d %s, want 403 queue_required", r.Status, r.Raw)
	}
	valid := domain.SignPass(a.passKey, domain.Pass{Voucher: id, User: 30, Expires: time.Now().Add(time.Minute)})
	if r := a.grabWith(id, tok, httpapi.PassHeader, valid); r.Status != http.StatusAccepted {
		t.Fatalf("first come with a valid pass: %d %s", r.Status, r.Raw)
	}
}

func TestGrabAProofOfWorkSaleNeedsAProof(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	id := a.createGated(5, domain.AdmissionFirstCome, domain.ChallengePow)
	tok := a.token(40, false)
	// This API has no verifier of proofs: no grab is ever proven.
	for _, header := range [][]string{nil, {httpapi.PowHeader, "c2VlZA:42"}} {
		if r := a.grabWith(id, tok, header...); r.Status != http.StatusForbidden || r.code() != "challenge_required" {
			t.Fatalf("grab with %q: %d %s, want 403 challenge_required", header, r.Status, r.Raw)
		}
	}
	if got := a.streamLen(id.String()); got != 0 {
		t.Fatalf("refused grabs queued %d reservations, want none", got)
	}
}
