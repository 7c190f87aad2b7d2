package httpapi

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
)

// campaignsPath is the campaigns' collection; their routes start with it.
const campaignsPath = "/api/v1/campaigns"

// accessOpen is the only access a campaign has yet: anyone may buy (codes and
// allowlists are not built).
const accessOpen = "open"

// CampaignJSON is the contract's campaign, as the API answers it.
type CampaignJSON struct {
	ID           string `json:"id"`
	Title        string `json:"title"`
	BeginsAt     stamp  `json:"begins_at"`
	EndsAt       stamp  `json:"ends_at"`
	PerUserLimit int    `json:"per_user_limit"`
	// Cap is null for a campaign without one.
	Cap       *int                 `json:"cap"`
	Remaining int                  `json:"remaining"`
	State     domain.SaleState     `json:"state"`
	Admission domain.Admission     `json:"admission"`
	Challenge domain.ChallengeKind `json:"challenge"`
	// PowDifficulty is there only with the challenge pow, as a voucher's.
	PowDifficulty int `json:"pow_difficulty,omitempty"`
	// QueueOpensAt and QueueWindow are there only with a waiting room, as a
	// voucher's: one room for the whole drop (…/campaigns/{id}/queue); EntriesOpenAt
	// only with a draw: one draw for the whole drop (…/campaigns/{id}/entries); the
	// Commitment with either.
	QueueOpensAt  *stamp `json:"queue_opens_at,omitempty"`
	QueueWindow   int    `json:"queue_window,omitempty"`
	EntriesOpenAt *stamp `json:"entries_open_at,omitempty"`
	Commitment    string `json:"commitment,omitempty"`
	Access        string `json:"access"`
	// Vouchers are the ids of its vouchers, in creation order.
	Vouchers []string `json:"vouchers"`
}

// toCampaignJSON renders a campaign as every answer that holds one renders it: with
// its remaining units and its sale's state as the use case read them.
func toCampaignJSON(c application.LiveCampaign) CampaignJSON {
	out := CampaignJSON{
		ID:            c.ID.String(),
		Title:         c.Title,
		BeginsAt:      stamp(c.BeginsAt),
		EndsAt:        stamp(c.EndsAt),
		PerUserLimit:  c.PerUserLimit,
		Cap:           c.Cap,
		Remaining:     c.Remaining,
		State:         c.State,
		Admission:     c.Admission,
		Challenge:     c.Challenge,
		PowDifficulty: c.PowDifficulty,
		QueueOpensAt:  optionalStamp(c.QueueOpensAt),
		QueueWindow:   c.QueueWindow,
		EntriesOpenAt: optionalStamp(c.EntriesOpenAt),
		Commitment:    c.Room().Commitment(),
		Access:        accessOpen,
		Vouchers:      make([]string, 0, c.Variants),
	}
	for _, id := range c.VoucherIDs() {
		out.Vouchers = append(out.Vouchers, id.String())
	}
	return out
}

// createCampaignRequest is the body of POST /api/v1/campaigns.
type createCampaignRequest struct {
	Title        *string    `json:"title"`
	BeginsAt     *time.Time `json:"begins_at"`
	EndsAt       *time.Time `json:"ends_at"`
	PerUserLimit *int       `json:"per_user_limit"`
	// Cap null is as good as absent: no cap.
	Cap           *int                  `json:"cap"`
	Admission     *domain.Admission     `json:"admission"`
	Challenge     *domain.ChallengeKind `json:"challenge"`
	PowDifficulty *int                  `json:"pow_difficulty"`
	QueueOpensAt  *time.Time            `json:"queue_opens_at"`
	QueueWindow   *int                  `json:"queue_window"`
	EntriesOpenAt *time.Time            `json:"entries_open_at"`
	Access        *string               `json:"access"`
}

// command returns the use case's command of req, or a *domain.ValidationError for a
// member missing or given a value it never takes (the use case judges the rest).
func (req createCampaignRequest) command() (application.CreateCampaignCmd, error) {
	switch {
	case req.Title == nil:
		return application.CreateCampaignCmd{}, domain.Invalid("title", "is required")
	case req.BeginsAt == nil:
		return application.CreateCampaignCmd{}, domain.Invalid("begins_at", "is required")
	case req.EndsAt == nil:
		return application.CreateCampaignCmd{}, domain.Invalid("ends_at", "is required")
	case req.PerUserLimit == nil:
		return application.CreateCampaignCmd{}, domain.Invalid("per_user_limit", "is required")
	case req.Access != nil && *req.Access != accessOpen:
		return application.CreateCampaignCmd{}, domain.Invalid("access", "must be open: codes and allowlists are not built yet")
	}
	cmd := application.CreateCampaignCmd{Title: *req.Title, BeginsAt: *req.BeginsAt, EndsAt: *req.EndsAt,
		PerUserLimit: *req.PerUserLimit, Cap: req.Cap}
	// Given explicitly, a mode is never empty (the use case reads "" as the default).
	if req.Admission != nil {
		if cmd.Admission = *req.Admission; cmd.Admission == "" {
			return application.CreateCampaignCmd{}, domain.Invalid("admission", "must be first_come, waiting_room or draw")
		}
	}
	if (req.QueueOpensAt != nil || req.QueueWindow != nil) && cmd.Admission != domain.AdmissionWaitingRoom {
		return application.CreateCampaignCmd{}, domain.Invalid("queue_window", "queue_opens_at and queue_window are only for a waiting room")
	}
	if req.EntriesOpenAt != nil {
		if cmd.Admission != domain.AdmissionDraw {
			return application.CreateCampaignCmd{}, domain.Invalid("entries_open_at", "is only for a draw")
		}
		cmd.EntriesOpenAt = *req.EntriesOpenAt
	}
	if req.QueueWindow != nil {
		if cmd.QueueWindow = *req.QueueWindow; cmd.QueueWindow == 0 {
			return application.CreateCampaignCmd{}, domain.Invalid("queue_window", "must be between 1 and 1000000")
		}
	}
	if req.QueueOpensAt != nil {
		cmd.QueueOpensAt = *req.QueueOpensAt
	}
	if req.Challenge != nil {
		if cmd.Challenge = *req.Challenge; cmd.Challenge == "" {
			return application.CreateCampaignCmd{}, domain.Invalid("challenge", "must be none or pow")
		}
	}
	if req.PowDifficulty != nil {
		if cmd.Challenge != domain.ChallengePow {
			return application.CreateCampaignCmd{}, domain.Invalid("pow_difficulty", "is only for a campaign with challenge pow")
		}
		if cmd.PowDifficulty = *req.PowDifficulty; cmd.PowDifficulty == 0 {
			return application.CreateCampaignCmd{}, domain.Invalid("pow_difficulty", "must be between 1 and 32")
		}
	}
	return cmd, nil
}

// createCampaign stores a campaign and answers 201 with it and its Location; under an
// idempotency key the answer is kept with the campaign.
func (h handlers) createCampaign(c echo.Context) error {
	var req createCampaignRequest
	if err := decodeJSON(c, &req, false); err != nil {
		return err
	}
	cmd, err := req.command()
	if err != nil {
		return err
	}
	cmd.By, cmd.Receipt = author(c), receiptFor(c, createdCampaign)
	live, err := h.uc.CreateCampaign.Handle(c.Request().Context(), cmd)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, c.Request().URL.Path+"/"+live.ID.String())
	return h.answerCampaign(c, live, "campaign created; its terms reach the grab path with its first voucher", createdCampaign)
}

// createdCampaign is the answer to creating campaign c: 201 with the campaign.
func createdCampaign(c application.LiveCampaign) (int, []byte, error) {
	return rendered(http.StatusCreated, toCampaignJSON(c))
}

// editedCampaign is the answer to a change of campaign c: 200 with the campaign.
func editedCampaign(c application.LiveCampaign) (int, []byte, error) {
	return rendered(http.StatusOK, toCampaignJSON(c))
}

// answerCampaign answers a write that stored campaign c by answer; when the grab path
// could not take what was stored yet (c.Warming), it logs later, naming why.
func (h handlers) answerCampaign(c echo.Context, live application.LiveCampaign, later string,
	answer func(application.LiveCampaign) (int, []byte, error)) error {
	if live.Warming != nil {
		h.log.Warn(later, zap.String("campaign", live.ID.String()), zap.Error(live.Warming))
	}
	return answerWith(c, live, answer)
}

// campaignListJSON is the contract's page of campaigns.
type campaignListJSON struct {
	Campaigns  []CampaignJSON `json:"campaigns"`
	NextCursor string         `json:"next_cursor,omitempty"`
}

func (h handlers) listCampaigns(c echo.Context) error {
	limit, cursor, err := pageParams(c)
	if err != nil {
		return err
	}
	page, err := h.uc.ListCampaigns.Handle(c.Request().Context(), limit, cursor)
	if err != nil {
		return err
	}
	out := campaignListJSON{Campaigns: make([]CampaignJSON, len(page.Campaigns)), NextCursor: page.NextCursor}
	for i, live := range page.Campaigns {
		out.Campaigns[i] = toCampaignJSON(live)
	}
	return c.JSON(http.StatusOK, out)
}

func (h handlers) getCampaign(c echo.Context) error {
	id, err := domain.ParseCampaignID(c.Param("id"))
	if err != nil {
		return err
	}
	live, err := h.uc.GetCampaign.Handle(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toCampaignJSON(live))
}

// editCampaignRequest is the body of PATCH /api/v1/campaigns/{id}: each member given
// is a change; a member given null is as good as absent (so a cap is changed, never
// taken away).
type editCampaignRequest struct {
	Cap          *int       `json:"cap"`
	PerUserLimit *int       `json:"per_user_limit"`
	Title        *string    `json:"title"`
	EndsAt       *time.Time `json:"ends_at"`
}

// editCampaign changes a campaign and answers 200 with it as the change left it;
// under an idempotency key the answer is kept with the change.
func (h handlers) editCampaign(c echo.Context) error {
	id, err := domain.ParseCampaignID(c.Param("id"))
	if err != nil {
		return err
	}
	var req editCampaignRequest
	if err := decodeJSON(c, &req, false); err != nil {
		return err
	}
	live, err := h.uc.UpdateCampaign.Handle(c.Request().Context(), application.UpdateCampaignCmd{
		ID:      id,
		Edit:    domain.CampaignEdit{Cap: req.Cap, PerUserLimit: req.PerUserLimit, Title: req.Title, EndsAt: req.EndsAt},
		By:      author(c),
		Receipt: receiptFor(c, editedCampaign),
	})
	if err != nil {
		return err
	}
	return h.answerCampaign(c, live, "campaign changed; its vouchers' sale states take its new end later", editedCampaign)
}

// campaignStatsJSON is a campaign's stats: its cap (null when none), its vouchers'
// figures summed (under a cap, remaining is the cap's units not taken), and each
// voucher's own.
type campaignStatsJSON struct {
	Cap *int `json:"cap"`
	StatsJSON
	Vouchers []campaignVoucherStatsJSON `json:"vouchers"`
}

// campaignVoucherStatsJSON is one voucher's stats within its campaign's.
type campaignVoucherStatsJSON struct {
	VoucherID string `json:"voucher_id"`
	StatsJSON
}

func (h handlers) campaignStats(c echo.Context) error {
	id, err := domain.ParseCampaignID(c.Param("id"))
	if err != nil {
		return err
	}
	s, err := h.uc.GetCampaignStats.Handle(c.Request().Context(), id)
	if err != nil {
		return err
	}
	out := campaignStatsJSON{Cap: s.Cap, StatsJSON: toStatsJSON(s.VoucherStats),
		Vouchers: make([]campaignVoucherStatsJSON, len(s.Vouchers))}
	for i, v := range s.Vouchers {
		out.Vouchers[i] = campaignVoucherStatsJSON{VoucherID: id.Variant(i + 1).String(), StatsJSON: toStatsJSON(v)}
	}
	return c.JSON(http.StatusOK, out)
}
