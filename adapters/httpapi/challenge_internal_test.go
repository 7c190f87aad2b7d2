package httpapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckill/seckill/adapters/memory"
	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/system"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
)

// A challenge asks for two more bits while more than 80% of the grab door's limit is
// in flight, and none more otherwise, or when the door bounds nothing.
func TestChallengesRiseWhileTheDoorIsBusy(t *testing.T) {
	t.Parallel()
	a := NewAdmission(AdmissionOptions{MaxInflight: 10})
	for _, tc := range []struct{ inflight, want int }{{0, 0}, {8, 0}, {9, raiseBits}, {10, raiseBits}} {
		a.inflight.Store(int64(tc.inflight))
		if got := a.powRaise(); got != tc.want {
			t.Errorf("%d of 10 in flight: raise %d, want %d", tc.inflight, got, tc.want)
		}
	}
	if got := NewAdmission(AdmissionOptions{}).powRaise(); got != 0 {
		t.Errorf("a door that bounds nothing raises %d bits", got)
	}
}

// The gate lets through a draw's entry of a voucher without a challenge as it is, and
// one of a voucher with a challenge only with a proof of a challenge issued to its
// user, once; a refusal carries a fresh challenge (withChallenge), as hard as the
// door's load makes it.
func TestProofSpentOnceRefusalCarriesAChallenge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	vouchers := memory.NewVouchers()
	now := time.Now()
	store := func(v domain.Voucher) domain.Voucher {
		v.Title, v.Stock, v.PerUserLimit, v.BeginsAt, v.EndsAt = "x", 5, 1, now.Add(time.Hour), now.Add(2*time.Hour)
		v.Admission, v.EntriesOpenAt = domain.AdmissionDraw, now
		if err := vouchers.Create(ctx, &v, domain.Author{}, nil); err != nil {
			t.Fatal(err)
		}
		return v
	}
	pow := store(domain.Voucher{Challenge: domain.ChallengePow, PowDifficulty: 6})
	plain := store(domain.Voucher{Challenge: domain.ChallengeNone})
	proofs := redisstore.NewProofOfWork(testenv.Redis(t), redisstore.Options{Prefix: "t" + testenv.Unique()}, system.Clock{})
	door := NewAdmission(AdmissionOptions{MaxInflight: 10})
	reg := prometheus.NewRegistry()
	h := handlers{door: door, metrics: NewMetrics(reg), uc: UseCases{
		IssueChallenge: application.NewIssueChallenge(application.NewRoomSales(vouchers, nil), proofs, system.Clock{}),
	}}
	gate := application.NewBuyerGate(vouchers, system.Clock{}, application.GateOptions{Proofs: application.NewVerifyProof(proofs)})
	// prove checks a draw's entry of user in v as enterDraw does.
	prove := func(c echo.Context, v domain.Voucher, user domain.UserID) error {
		_, err := gate.Check(c.Request().Context(), application.BuyerCommand{Door: application.DoorDraw, VoucherID: v.ID, UserID: user,
			Proof: c.Request().Header.Get(PowHeader)})
		return h.withChallenge(c, v.ID, user, err)
	}
	e := echo.New()
	request := func(proof string) echo.Context {
		req := httptest.NewRequest(http.MethodPost, "/", nil)
		if proof != "" {
			req.Header.Set(PowHeader, proof)
		}
		return e.NewContext(req, httptest.NewRecorder())
	}
	if err := prove(request(""), plain, 7); err != nil {
		t.Fatalf("a voucher without a challenge: %v", err)
	}
	// Refused without a proof, with a challenge to answer.
	err := prove(request(""), pow, 7)
	cr, ok := errors.AsType[*challengeRequired](err)
	if !ok || cr.offer.Difficulty != 6 {
		t.Fatalf("no proof: %v, want challenge_required with a challenge of 6 bits", err)
	}
	status, detail := classify(err)
	if status != http.StatusForbidden || detail.Code != "challenge_required" || detail.Challenge != cr.offer.Challenge ||
		detail.Difficulty != 6 || detail.ExpiresAt == "" {
		t.Fatalf("answered %d %+v, want 403 challenge_required with the challenge", status, detail)
	}
	proof := cr.offer.Challenge + ":" + domain.SolvePow(cr.offer.Challenge, cr.offer.Difficulty)
	if err := prove(request(proof), pow, 8); !errors.Is(err, domain.ErrChallengeRequired) {
		t.Fatalf("another user's proof: %v, want challenge_required", err)
	}
	if err := prove(request(proof), pow, 7); err != nil {
		t.Fatalf("the user's proof: %v", err)
	}
	// Spent; and with the door busy, the fresh challenge asks for two bits more.
	door.inflight.Store(9)
	err = prove(request(proof), pow, 7)
	if cr, ok := errors.AsType[*challengeRequired](err); !ok || cr.offer.Difficulty != 6+raiseBits {
		t.Fatalf("the proof again, the door busy: %v, want challenge_required asking %d bits", err, 6+raiseBits)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	raised := -1.0
	for _, f := range families {
		if f.GetName() == "seckill_pow_difficulty_raise" {
			raised = f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	if raised != raiseBits {
		t.Fatalf("seckill_pow_difficulty_raise = %v, want %d", raised, raiseBits)
	}
}
