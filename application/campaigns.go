package application

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// LiveCampaign is a campaign with its units left and its sale's state, as read at one
// moment of the sale's clock.
type LiveCampaign struct {
	domain.Campaign
	// Remaining is what buyers can still take (domain.Campaign.Remaining).
	Remaining int
	State     domain.SaleState
	// Warming, set by CreateCampaign and UpdateCampaign only, says why the grab path
	// could not be given the campaign's terms yet; the warm-up or the first grab will.
	Warming error
}

// campaignReads is what the use cases that answer campaigns share.
type campaignReads struct {
	campaigns ports.Campaigns
	vouchers  ports.Vouchers
	stock     ports.Stock
	clock     ports.Clock
}

// live answers c with its remaining units (its vouchers' left on the grab path, or by
// the database where the grab path has no state) and its state.
func (r campaignReads) live(ctx context.Context, c domain.Campaign) (LiveCampaign, error) {
	if c.Variants == 0 {
		return liveAt(c, nil, nil, r.clock.Now()), nil
	}
	stocks, left, err := r.units(ctx, c.ID)
	if err != nil {
		return LiveCampaign{}, err
	}
	return liveAt(c, stocks, left, r.clock.Now()), nil
}

// units reads the stock and the units left of each voucher of campaign id: on the
// grab path, or by the database where the grab path has no state.
func (r campaignReads) units(ctx context.Context, id domain.CampaignID) (stocks, left map[domain.VoucherID]int, err error) {
	vs, err := r.vouchers.List(ctx, ports.VoucherQuery{Campaign: id, Limit: domain.MaxVariants})
	if err != nil {
		return nil, nil, fmt.Errorf("vouchers of campaign %s: %w", id, err)
	}
	live, err := withRemaining(ctx, r.stock, r.clock, vs)
	if err != nil {
		return nil, nil, err
	}
	stocks, left = make(map[domain.VoucherID]int, len(live)), make(map[domain.VoucherID]int, len(live))
	for _, v := range live {
		stocks[v.ID], left[v.ID] = v.Stock, v.Remaining
	}
	return stocks, left, nil
}

// liveAt answers c at now with its vouchers' stocks and units left.
func liveAt(c domain.Campaign, stocks, left map[domain.VoucherID]int, now time.Time) LiveCampaign {
	n := c.Remaining(stocks, left)
	return LiveCampaign{Campaign: c, Remaining: n, State: c.State(now, n)}
}

// CreateCampaignCmd is what an admin asks for when putting a drop on sale; its
// vouchers are created afterwards, each with CreateVoucherCmd.CampaignID.
type CreateCampaignCmd struct {
	Title        string
	BeginsAt     time.Time
	EndsAt       time.Time
	PerUserLimit int
	// Cap, when set, bounds the units sold across the campaign's vouchers.
	Cap           *int
	Admission     domain.Admission
	Challenge     domain.ChallengeKind
	PowDifficulty int
	// QueueOpensAt and QueueWindow are the waiting room's (zero: the defaults).
	QueueOpensAt time.Time
	QueueWindow  int
	// EntriesOpenAt is when the draw takes entries (zero: from now).
	EntriesOpenAt time.Time
	// By is who creates it, for the audit log.
	By domain.Author
	// Receipt, when set, keeps the request's answer with the campaign, or neither.
	Receipt *ports.Receipt[LiveCampaign]
}

// CreateCampaign stores a new campaign and loads its terms for the grab path.
type CreateCampaign struct {
	campaigns ports.Campaigns
	stock     ports.CampaignStock
	clock     ports.Clock
}

// NewCreateCampaign returns the use case; stock carries a new campaign's terms to the
// grab path.
func NewCreateCampaign(campaigns ports.Campaigns, stock ports.CampaignStock, clock ports.Clock) *CreateCampaign {
	return &CreateCampaign{campaigns: campaigns, stock: stock, clock: clock}
}

// Handle validates and stores the campaign with its audit entry, then loads its terms
// for the grab path (a failure there is reported in Warming: the campaign is created
// all the same, and its terms are loaded with its first voucher). It returns a
// *domain.ValidationError for a bad command, or ports.ErrClaimLost.
func (uc *CreateCampaign) Handle(ctx context.Context, cmd CreateCampaignCmd) (LiveCampaign, error) {
	c := domain.Campaign{
		Title: cmd.Title, BeginsAt: cmd.BeginsAt.UTC(), EndsAt: cmd.EndsAt.UTC(), PerUserLimit: cmd.PerUserLimit,
		Cap: cmd.Cap, Admission: cmd.Admission, Challenge: cmd.Challenge, PowDifficulty: cmd.PowDifficulty,
		QueueOpensAt: cmd.QueueOpensAt.UTC(), QueueWindow: cmd.QueueWindow, EntriesOpenAt: cmd.EntriesOpenAt.UTC(),
	}
	now := uc.clock.Now()
	c = c.WithAdmissionDefaults(now)
	if err := c.ValidateNew(now); err != nil {
		return LiveCampaign{}, err
	}
	created := func(c domain.Campaign) LiveCampaign {
		return LiveCampaign{Campaign: c, State: c.State(now, 0)}
	}
	var receipt *ports.Receipt[domain.Campaign]
	if r := cmd.Receipt; r != nil {
		receipt = &ports.Receipt[domain.Campaign]{Claim: r.Claim, Answer: func(c domain.Campaign) (int, []byte, error) {
			return r.Answer(created(c))
		}}
	}
	if err := uc.campaigns.Create(ctx, &c, cmd.By, receipt); err != nil {
		return LiveCampaign{}, fmt.Errorf("create campaign: %w", err)
	}
	live := created(c)
	if err := uc.stock.WarmCampaign(ctx, c); err != nil {
		live.Warming = err
	}
	return live, nil
}

// GetCampaign reads one campaign with its remaining units.
type GetCampaign struct{ campaignReads }

// NewGetCampaign returns the use case; clock judges the sale's state.
func NewGetCampaign(campaigns ports.Campaigns, vouchers ports.Vouchers, stock ports.Stock, clock ports.Clock) *GetCampaign {
	return &GetCampaign{campaignReads{campaigns: campaigns, vouchers: vouchers, stock: stock, clock: clock}}
}

// Handle returns the campaign, or domain.ErrNotFound.
func (uc *GetCampaign) Handle(ctx context.Context, id domain.CampaignID) (LiveCampaign, error) {
	c, err := uc.campaigns.Get(ctx, id)
	if err != nil {
		return LiveCampaign{}, err
	}
	return uc.live(ctx, c)
}

// ListCampaigns reads a page of campaigns, newest first.
type ListCampaigns struct{ campaignReads }

// NewListCampaigns returns the use case.
func NewListCampaigns(campaigns ports.Campaigns, vouchers ports.Vouchers, stock ports.Stock, clock ports.Clock) *ListCampaigns {
	return &ListCampaigns{campaignReads{campaigns: campaigns, vouchers: vouchers, stock: stock, clock: clock}}
}

// CampaignPage is a page of campaigns, newest first.
type CampaignPage struct {
	Campaigns []LiveCampaign
	// NextCursor asks for the next page; empty on the last page.
	NextCursor string
}

// Handle returns the page after cursor ("" for the first) of at most limit campaigns
// (0: DefaultPageLimit). A limit out of range or a cursor not of this list returns a
// *domain.ValidationError.
func (uc *ListCampaigns) Handle(ctx context.Context, limit int, cursor string) (CampaignPage, error) {
	limit, err := pageLimit(limit)
	if err != nil {
		return CampaignPage{}, err
	}
	q := ports.CampaignQuery{Limit: limit + 1}
	if cursor != "" {
		f, err := decodeCursor(cursor, campaignCursorKind, 1)
		if err != nil {
			return CampaignPage{}, err
		}
		if q.Before, err = domain.ParseCampaignID(f[0]); err != nil || encodeCursor(campaignCursorKind, f[0]) != cursor {
			return CampaignPage{}, errBadCursor
		}
	}
	cs, err := uc.campaigns.List(ctx, q)
	if err != nil {
		return CampaignPage{}, fmt.Errorf("list campaigns: %w", err)
	}
	var page CampaignPage
	if len(cs) > limit {
		cs = cs[:limit]
		page.NextCursor = encodeCursor(campaignCursorKind, cs[limit-1].ID.String())
	}
	for _, c := range cs {
		live, err := uc.live(ctx, c)
		if err != nil {
			return CampaignPage{}, err
		}
		page.Campaigns = append(page.Campaigns, live)
	}
	return page, nil
}

// UpdateCampaignCmd is an admin's change of a campaign.
type UpdateCampaignCmd struct {
	ID   domain.CampaignID
	Edit domain.CampaignEdit
	// By is who makes the change, for the audit log.
	By domain.Author
	// Receipt, when set, keeps the request's answer with the change, or neither.
	Receipt *ports.Receipt[LiveCampaign]
}

// UpdateCampaign changes a campaign's cap, per-user limit, title or end.
type UpdateCampaign struct {
	campaignReads
	cstock  ports.CampaignStock
	changes ports.Changes
}

// NewUpdateCampaign returns the use case; cstock carries the terms to the grab path,
// changes announces the change of each of the campaign's vouchers.
func NewUpdateCampaign(campaigns ports.Campaigns, vouchers ports.Vouchers, stock ports.Stock, cstock ports.CampaignStock,
	clock ports.Clock, changes ports.Changes) *UpdateCampaign {
	return &UpdateCampaign{campaignReads{campaigns: campaigns, vouchers: vouchers, stock: stock, clock: clock}, cstock, changes}
}

// Handle stores the change with its audit entry and carries the new terms to the grab
// path in the same step, under the campaign's lock: a lower cap is stored only when
// the grab path holds no more units taken than it (domain.ErrNotEnoughUnits, nothing
// changed), and when the grab path cannot be reached nothing changes (an error
// wrapping it). A new end is then carried to each of the campaign's vouchers, whose
// window is the campaign's (a voucher whose write fails is carried by the warm-up's
// heal of stale terms; Warming says so). It returns the campaign as the change left
// it at one moment, domain.ErrNotFound, a *domain.ValidationError,
// or ports.ErrClaimLost; on any error nothing changed.
func (uc *UpdateCampaign) Handle(ctx context.Context, cmd UpdateCampaignCmd) (LiveCampaign, error) {
	// The campaign is answered as the change left it at now, with its vouchers' units
	// as read just before (a change of a campaign moves none of them): the answer the
	// receipt keeps and the one returned are the same, so a retry is answered alike.
	stocks, left, err := uc.units(ctx, cmd.ID)
	if err != nil {
		return LiveCampaign{}, err
	}
	now := uc.clock.Now()
	var receipt *ports.Receipt[domain.Campaign]
	if r := cmd.Receipt; r != nil {
		receipt = &ports.Receipt[domain.Campaign]{Claim: r.Claim, Answer: func(c domain.Campaign) (int, []byte, error) {
			return r.Answer(liveAt(c, stocks, left, now))
		}}
	}
	c, err := uc.campaigns.Update(ctx, cmd.ID, ports.CampaignUpdate{Action: domain.AuditCampaignUpdate, By: cmd.By,
		Change:  func(c domain.Campaign) (domain.Campaign, error) { return c.Apply(cmd.Edit) },
		Commit:  func(ctx context.Context, _, after domain.Campaign) error { return uc.cstock.EditCampaign(ctx, after) },
		Receipt: receipt,
	})
	if err != nil {
		return LiveCampaign{}, err
	}
	live := liveAt(c, stocks, left, now)
	if cmd.Edit.EndsAt != nil {
		live.Warming = uc.carryWindow(ctx, c)
	}
	return live, nil
}

// carryWindow gives each of c's vouchers, as stored now (the campaign's window with
// them), to the grab path, and announces their change.
func (uc *UpdateCampaign) carryWindow(ctx context.Context, c domain.Campaign) error {
	vs, err := uc.vouchers.List(ctx, ports.VoucherQuery{Campaign: c.ID, Limit: domain.MaxVariants})
	if err != nil {
		return fmt.Errorf("vouchers of campaign %s: %w", c.ID, err)
	}
	var failed error
	changed := make([]ports.Change, 0, len(vs))
	for _, v := range vs {
		if _, err := uc.stock.Edit(ctx, v, ports.EditIfNewer); err != nil {
			failed = errors.Join(failed, fmt.Errorf("carry the window of voucher %s: %w", v.ID, err))
		}
		changed = append(changed, ports.Change{Voucher: v.ID})
	}
	publish(ctx, uc.changes, changed...)
	return failed
}

// CampaignStats is where a campaign's units are: its vouchers' stats summed, and its
// cap. With a cap, Remaining is the cap's units not taken, so that
// cap = remaining + queued + awaiting_payment + paid; without one it is the sum of its
// vouchers' remaining units.
type CampaignStats struct {
	Cap *int
	VoucherStats
	// Vouchers are the stats of each of its vouchers, in creation order.
	Vouchers []VoucherStats
}

// GetCampaignStats reads a campaign's stats.
type GetCampaignStats struct {
	campaigns ports.Campaigns
	vouchers  *GetVoucherStats
}

// NewGetCampaignStats returns the use case, which reads each voucher's stats with
// vouchers.
func NewGetCampaignStats(campaigns ports.Campaigns, vouchers *GetVoucherStats) *GetCampaignStats {
	return &GetCampaignStats{campaigns: campaigns, vouchers: vouchers}
}

// Handle returns the stats, or domain.ErrNotFound. Each voucher's figures are one
// moment's (GetVoucherStats), so the identity holds for each and for their sum.
func (uc *GetCampaignStats) Handle(ctx context.Context, id domain.CampaignID) (CampaignStats, error) {
	c, err := uc.campaigns.Get(ctx, id)
	if err != nil {
		return CampaignStats{}, err
	}
	out := CampaignStats{Cap: c.Cap}
	taken := 0
	for _, vid := range c.VoucherIDs() {
		s, err := uc.vouchers.Handle(ctx, vid)
		if err != nil {
			return CampaignStats{}, fmt.Errorf("voucher %s: %w", vid, err)
		}
		out.Vouchers = append(out.Vouchers, s)
		sum := &out.VoucherStats
		sum.Stock += s.Stock
		sum.Remaining += s.Remaining
		sum.Queued += s.Queued
		sum.AwaitingPayment += s.AwaitingPayment
		sum.Paid += s.Paid
		sum.Cancelled += s.Cancelled
		sum.Expired += s.Expired
		sum.Failed += s.Failed
		sum.Waitlist += s.Waitlist
		sum.Pending += s.Pending
		sum.OldestQueued = max(sum.OldestQueued, s.OldestQueued)
		taken += s.Stock - s.Remaining
	}
	if c.Cap != nil {
		out.Remaining = *c.Cap - taken
	}
	return out, nil
}

// campaignCursorKind names the list of campaigns in its cursors: "c|<campaign id>".
const campaignCursorKind = "c"

// campaignOf returns the campaign of voucher id, read from campaigns, or ok false for
// a voucher in none.
func campaignOf(ctx context.Context, campaigns ports.Campaigns, id domain.VoucherID) (c domain.Campaign, ok bool, err error) {
	cid, _ := id.Campaign()
	if cid == 0 || campaigns == nil {
		return domain.Campaign{}, false, nil
	}
	c, err = campaigns.Get(ctx, cid)
	if err != nil {
		return domain.Campaign{}, false, fmt.Errorf("campaign %s: %w", cid, err)
	}
	return c, true, nil
}
