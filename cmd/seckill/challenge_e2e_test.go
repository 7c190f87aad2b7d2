package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/turnstile"
	"github.com/seckill/seckill/domain"
)

// createChallenged puts a voucher with a challenge of difficulty bits on sale now.
func (in *instance) createChallenged(stock, difficulty int) string {
	in.t.Helper()
	now := time.Now().UTC()
	status, body := in.call(http.MethodPost, "/api/v1/vouchers", in.token(1, true), map[string]any{
		"title": "Coffee", "stock": stock, "challenge": "pow", "pow_difficulty": difficulty,
		"begins_at": now.Add(-time.Minute), "ends_at": now.Add(time.Hour),
	})
	if status != http.StatusCreated {
		in.t.Fatalf("create a voucher with a challenge: %d %v", status, body)
	}
	return body["id"].(string)
}

// grabWithProof grabs voucher as user with proof in X-Seckill-Pow and returns the
// status and the error object (nil on success).
func (in *instance) grabWithProof(voucher string, user domain.UserID, proof string) (int, map[string]any) {
	in.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, in.base+"/api/v1/vouchers/"+voucher+"/grab", nil)
	req.Header.Set("Authorization", "Bearer "+in.token(user, false))
	if proof != "" {
		req.Header.Set("X-Seckill-Pow", proof)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		in.t.Fatal(err)
	}
	defer res.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(res.Body).Decode(&body)
	e, _ := body["error"].(map[string]any)
	return res.StatusCode, e
}

// serve with the default challenge: a sale with a proof of work hands out challenges,
// takes a grab with a solved one, and counts both.
func TestServeProofOfWork(t *testing.T) {
	in := startInstance(t)
	id := in.createChallenged(5, 10)
	status, c := in.call(http.MethodGet, "/api/v1/vouchers/"+id+"/challenge", in.token(7, false), nil)
	challenge, _ := c["challenge"].(string)
	if status != http.StatusOK || challenge == "" || c["difficulty"] != 10.0 {
		t.Fatalf("GET challenge: %d %v", status, c)
	}
	if status, e := in.grabWithProof(id, 7, ""); status != http.StatusForbidden || e["code"] != "challenge_required" || e["challenge"] == nil {
		t.Fatalf("a grab without a proof: %d %v, want 403 challenge_required with a challenge", status, e)
	}
	if status, e := in.grabWithProof(id, 7, challenge+":"+domain.SolvePow(challenge, 10)); status != http.StatusAccepted {
		t.Fatalf("a grab with the proof: %d %v", status, e)
	}
	m := scrapeURL(t, in.base+"/metrics")
	if m[`seckill_challenges_total{outcome="issued"}`] != 2 || m[`seckill_challenges_total{outcome="verified"}`] != 1 {
		t.Fatalf("challenges issued %v and verified %v, want 2 and 1", m[`seckill_challenges_total{outcome="issued"}`], m[`seckill_challenges_total{outcome="verified"}`])
	}
}

// serve with SECKILL_CHALLENGE=turnstile: the same sale hands out the widget's
// settings, and takes a grab with a token siteverify (a local fake) vouches for, bound
// to the user and the voucher.
func TestServeTurnstile(t *testing.T) {
	const secret, sitekey = "0x4AAAAAAAe2e-secret", "0x4AAAAAAAe2e-site"
	var cdata atomic.Value // the cdata the fake's one good token was solved with
	cdata.Store("")
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok := r.PostFormValue("secret") == secret && r.PostFormValue("response") == "tok-ok"
		_ = json.NewEncoder(w).Encode(map[string]any{"success": ok, "action": turnstile.Action, "cdata": cdata.Load(), "error-codes": []string{}})
	}))
	t.Cleanup(fake.Close)
	in := startInstance(t, "SECKILL_CHALLENGE=turnstile", "SECKILL_TURNSTILE_SECRET="+secret,
		"SECKILL_TURNSTILE_SITEKEY="+sitekey, "SECKILL_TURNSTILE_URL="+fake.URL)
	id := in.createChallenged(5, 16)
	status, c := in.call(http.MethodGet, "/api/v1/vouchers/"+id+"/challenge", in.token(7, false), nil)
	if status != http.StatusOK || c["sitekey"] != sitekey || c["action"] != turnstile.Action || c["cdata"] != "v"+id+"-u7" || c["challenge"] != nil {
		t.Fatalf("GET challenge under Turnstile: %d %v", status, c)
	}
	cdata.Store(c["cdata"].(string))
	if status, e := in.grabWithProof(id, 7, "tok-forged"); status != http.StatusForbidden || e["sitekey"] != sitekey {
		t.Fatalf("a grab with a forged token: %d %v, want 403 with the site key", status, e)
	}
	if status, e := in.grabWithProof(id, 8, "tok-ok"); status != http.StatusForbidden || !strings.HasPrefix(e["cdata"].(string), "v"+id+"-u8") {
		t.Fatalf("another user's token: %d %v, want 403 with that user's cdata", status, e)
	}
	if status, e := in.grabWithProof(id, 7, "tok-ok"); status != http.StatusAccepted {
		t.Fatalf("a grab with the user's token: %d %v", status, e)
	}
}
