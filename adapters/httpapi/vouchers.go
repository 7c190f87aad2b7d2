package httpapi

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

type handlers struct {
	uc  UseCases
	log *zap.Logger
	// clock is the sale's clock (GET /api/v1/time), payment the orders' payment
	// window (their expires_at).
	clock   ports.Clock
	payment domain.PaymentWindow
	// streams holds the event streams; nil when the API has none.
	streams *Streams
	// door is the grab's admission, whose load raises the challenges' difficulty;
	// metrics the API's instruments.
	door    *Admission
	metrics *Metrics
}

// VoucherJSON is the contract's voucher, as the API answers it and a client (the
// load tool) reads it.
type VoucherJSON struct {
	ID           string           `json:"id"`
	Title        string           `json:"title"`
	Stock        int              `json:"stock"`
	Remaining    int              `json:"remaining"`
	BeginsAt     stamp            `json:"begins_at"`
	EndsAt       stamp            `json:"ends_at"`
	PerUserLimit int              `json:"per_user_limit"`
	Paused       bool             `json:"paused"`
	State        domain.SaleState `json:"state"`
	// Admission and Challenge are always there; the settings below them only for
	// the mode that has them (a waiting room, a draw, a proof of work).
	Admission     domain.Admission     `json:"admission"`
	Challenge     domain.ChallengeKind `json:"challenge"`
	QueueOpensAt  *stamp               `json:"queue_opens_at,omitempty"`
	QueueWindow   int                  `json:"queue_window,omitempty"`
	EntriesOpenAt *stamp               `json:"entries_open_at,omitempty"`
	PowDifficulty int                  `json:"pow_difficulty,omitempty"`
	// Commitment is the hex SHA-256 of the shuffle's seed (waiting room and draw).
	Commitment string `json:"commitment,omitempty"`
	// CampaignID is there only for a campaign's voucher.
	CampaignID string `json:"campaign_id,omitempty"`
}

// toVoucherJSON renders a voucher as every answer that holds one renders it: with its
// remaining units and its sale's state as the use case read them.
func toVoucherJSON(v application.LiveVoucher) VoucherJSON {
	out := VoucherJSON{
		ID:           v.ID.String(),
		Title:        v.Title,
		Stock:        v.Stock,
		Remaining:    v.Remaining,
		BeginsAt:     stamp(v.BeginsAt),
		EndsAt:       stamp(v.EndsAt),
		PerUserLimit: v.PerUserLimit,
		Paused:       v.Paused,
		State:        v.State,

		Admission:     v.Admission,
		Challenge:     v.Challenge,
		QueueOpensAt:  optionalStamp(v.QueueOpensAt),
		QueueWindow:   v.QueueWindow,
		EntriesOpenAt: optionalStamp(v.EntriesOpenAt),
		PowDifficulty: v.PowDifficulty,
		Commitment:    v.Commitment(),
	}
	if v.CampaignID != 0 {
		out.CampaignID = v.CampaignID.String()
	}
	return out
}

type createVoucherRequest struct {
	Title        *string    `json:"title"`
	Stock        *int       `json:"stock"`
	BeginsAt     *time.Time `json:"begins_at"`
	EndsAt       *time.Time `json:"ends_at"`
	PerUserLimit *int       `json:"per_user_limit"`

	Admission     *domain.Admission     `json:"admission"`
	Challenge     *domain.ChallengeKind `json:"challenge"`
	PowDifficulty *int                  `json:"pow_difficulty"`
	QueueOpensAt  *time.Time            `json:"queue_opens_at"`
	QueueWindow   *int                  `json:"queue_window"`
	EntriesOpenAt *time.Time            `json:"entries_open_at"`

	// CampaignID makes the voucher the campaign's next one: it then takes the
	// campaign's window, admission and challenge, and none of them may be given.
	CampaignID *string `json:"campaign_id"`
}

// campaignCmd copies the campaign of req into cmd, refusing the members a
// campaign's voucher takes from its campaign. A per-user limit not given is the
// campaign's (at most the stock).
func (req createVoucherRequest) campaignCmd(cmd *application.CreateVoucherCmd) error {
	id, err := domain.ParseCampaignID(*req.CampaignID)
	if err != nil {
		return domain.Invalid("campaign_id", "must be a positive integer, as a string")
	}
	for _, m := range []struct {
		name  string
		given bool
	}{
		{"begins_at", req.BeginsAt != nil}, {"ends_at", req.EndsAt != nil},
		{"admission", req.Admission != nil}, {"challenge", req.Challenge != nil}, {"pow_difficulty", req.PowDifficulty != nil},
		{"queue_opens_at", req.QueueOpensAt != nil}, {"queue_window", req.QueueWindow != nil},
		{"entries_open_at", req.EntriesOpenAt != nil},
	} {
		if m.given {
			return domain.Invalid(m.name, "is the campaign's: a voucher in a campaign takes its window, admission and challenge")
		}
	}
	cmd.CampaignID = id
	if req.PerUserLimit == nil {
		cmd.PerUserLimit = 0
	}
	return nil
}

// admissionCmd copies the admission settings of req into cmd. A setting given must
// be one its mode has (a queue window for a waiting room, a difficulty for a proof
// of work…), and given explicitly it is never zero.
func (req createVoucherRequest) admissionCmd(cmd *application.CreateVoucherCmd) error {
	if req.Admission != nil {
		cmd.Admission = *req.Admission
		if cmd.Admission == "" {
			return domain.Invalid("admission", "must be first_come, waiting_room or draw")
		}
	}
	if req.Challenge != nil {
		cmd.Challenge = *req.Challenge
		if cmd.Challenge == "" {
			return domain.Invalid("challenge", "must be none or pow")
		}
	}
	switch {
	case req.PowDifficulty != nil && cmd.Challenge != domain.ChallengePow:
		return domain.Invalid("pow_difficulty", "is only for a voucher with challenge pow")
	case (req.QueueOpensAt != nil || req.QueueWindow != nil) && cmd.Admission != domain.AdmissionWaitingRoom:
		return domain.Invalid("queue_window", "queue_opens_at and queue_window are only for a waiting room")
	case req.EntriesOpenAt != nil && cmd.Admission != domain.AdmissionDraw:
		return domain.Invalid("entries_open_at", "is only for a draw")
	}
	if req.PowDifficulty != nil {
		if cmd.PowDifficulty = *req.PowDifficulty; cmd.PowDifficulty == 0 {
			return domain.Invalid("pow_difficulty", "must be between 1 and 32")
		}
	}
	if req.QueueWindow != nil {
		if cmd.QueueWindow = *req.QueueWindow; cmd.QueueWindow == 0 {
			return domain.Invalid("queue_window", "must be between 1 and 1000000")
		}
	}
	if req.QueueOpensAt != nil {
		cmd.QueueOpensAt = *req.QueueOpensAt
	}
	if req.EntriesOpenAt != nil {
		cmd.EntriesOpenAt = *req.EntriesOpenAt
	}
	return nil
}

func (h handlers) createVoucher(c echo.Context) error {
	var req createVoucherRequest
	if err := decodeJSON(c, &req, false); err != nil {
		return err
	}
	switch {
	case req.Title == nil:
		return domain.Invalid("title", "is required")
	case req.Stock == nil:
		return domain.Invalid("stock", "is required")
	}
	limit := 1
	if req.PerUserLimit != nil {
		limit = *req.PerUserLimit
	}
	cmd := application.CreateVoucherCmd{
		Title: *req.Title, Stock: *req.Stock, PerUserLimit: limit, By: author(c), Receipt: receiptFor(c, createdVoucher),
	}
	if req.CampaignID != nil {
		if err := req.campaignCmd(&cmd); err != nil {
			return err
		}
	} else {
		switch {
		case req.BeginsAt == nil:
			return domain.Invalid("begins_at", "is required")
		case req.EndsAt == nil:
			return domain.Invalid("ends_at", "is required")
		}
		cmd.BeginsAt, cmd.EndsAt = *req.BeginsAt, *req.EndsAt
		if err := req.admissionCmd(&cmd); err != nil {
			return err
		}
	}
	v, err := h.uc.CreateVoucher.Handle(c.Request().Context(), cmd)
	if err != nil {
		return err
	}
	// Stored, so created: its sale state is loaded by the first grab or the
	// periodic warm-up (grabs answer 503 until then).
	c.Response().Header().Set(echo.HeaderLocation, c.Request().URL.Path+"/"+v.ID.String())
	return h.answerStored(c, v, "voucher created; its sale state will be loaded later", createdVoucher)
}

// answerStored answers a write that stored voucher v by answer; when the grab path
// could not take the stored terms yet (v.Warming), it logs later, naming why.
func (h handlers) answerStored(c echo.Context, v application.LiveVoucher, later string, answer func(application.LiveVoucher) (int, []byte, error)) error {
	if v.Warming != nil {
		h.log.Warn(later, zap.String("voucher", v.ID.String()), zap.Error(v.Warming))
	}
	return answerWith(c, v, answer)
}

// createdVoucher is the answer to creating voucher v: 201 with the voucher, as the
// use case answers it (every unit on sale).
func createdVoucher(v application.LiveVoucher) (int, []byte, error) {
	return rendered(http.StatusCreated, toVoucherJSON(v))
}

// voucherListJSON is the contract's page of vouchers.
type voucherListJSON struct {
	Vouchers   []VoucherJSON `json:"vouchers"`
	NextCursor string        `json:"next_cursor,omitempty"`
}

func (h handlers) listVouchers(c echo.Context) error {
	limit, cursor, err := pageParams(c)
	if err != nil {
		return err
	}
	// strictQuery has refused a repeated parameter; a status given, even empty, must
	// be one of the three.
	var status string
	if s, given := c.QueryParams()["status"]; given {
		if s[0] == "" {
			return domain.Invalid("status", "must be live, upcoming or ended")
		}
		status = s[0]
	}
	page, err := h.uc.ListVouchers.Handle(c.Request().Context(), application.ListVouchersQuery{
		Limit: limit, Cursor: cursor, Status: status,
	})
	if err != nil {
		return err
	}
	out := voucherListJSON{Vouchers: make([]VoucherJSON, len(page.Vouchers)), NextCursor: page.NextCursor}
	for i, v := range page.Vouchers {
		out.Vouchers[i] = toVoucherJSON(v)
	}
	return c.JSON(http.StatusOK, out)
}

func (h handlers) getVoucher(c echo.Context) error {
	id, err := domain.ParseVoucherID(c.Param("id"))
	if err != nil {
		return err
	}
	v, err := h.uc.GetVoucher.Handle(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toVoucherJSON(v))
}

// pauseSale pauses (or resumes) a voucher's sale and answers with the voucher.
func (h handlers) pauseSale(paused bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := domain.ParseVoucherID(c.Param("id"))
		if err != nil {
			return err
		}
		v, err := h.uc.PauseSale.Handle(c.Request().Context(), application.PauseSaleCmd{
			Voucher: id, Paused: paused, By: author(c),
		})
		if err != nil {
			return err
		}
		return h.answerStored(c, v, "paused flag stored; the grab path takes it once Redis answers", editedVoucher)
	}
}

// The headers a grab brings its gates in (domain.Sale.Judge): the waiting room's pass
// (a token of domain.SignPass) and a solved challenge ("<challenge>:<nonce>" for a proof
// of work).
const (
	PassHeader = "X-Seckill-Pass"
	PowHeader  = "X-Seckill-Pow"
)

type grabRequest struct {
	Quantity *int `json:"quantity"`
}

type grabResponse struct {
	OrderID   string             `json:"order_id"`
	VoucherID string             `json:"voucher_id"`
	Quantity  int                `json:"quantity"`
	Status    domain.OrderStatus `json:"status"`
}

func (h handlers) grab(c echo.Context) error {
	id, err := domain.ParseVoucherID(c.Param("id"))
	if err != nil {
		return err
	}
	body, err := requestBody(c)
	if err != nil {
		return err
	}
	qty := 1
	if len(body) > 0 { // most grabs send none, and need no decoding
		var req grabRequest
		if err := decodeBody(body, &req, true); err != nil {
			return err
		}
		if req.Quantity != nil {
			qty = *req.Quantity
		}
	}
	// A waiting room's pass and a solved challenge travel as headers, so a grab keeps
	// its body (most send none).
	header := c.Request().Header
	user := principal(c).User
	r, err := h.uc.GrabVoucher.Handle(c.Request().Context(), application.GrabVoucherCmd{
		VoucherID: id, UserID: user, Quantity: qty,
		Pass: header.Get(PassHeader), Proof: header.Get(PowHeader),
	})
	if err != nil {
		return h.withChallenge(c, id, user, err)
	}
	return answerJSON(c, http.StatusAccepted, grabResponse{
		OrderID: string(r.OrderID), VoucherID: r.VoucherID.String(), Quantity: r.Quantity, Status: domain.StatusQueued,
	})
}
