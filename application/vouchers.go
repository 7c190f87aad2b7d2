package application

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// LiveVoucher is a voucher with the units still on sale and its sale's state, as read
// at one moment of the sale's clock.
type LiveVoucher struct {
	domain.Voucher
	Remaining int
	// State is the sale's state when it was read (domain.Voucher.State).
	State domain.SaleState
	// Warming, set by CreateVoucher, EditVoucher and PauseSale only, says why the voucher's sale
	// state could not be loaded, or given the voucher's new terms, yet; it will be (see
	// CreateVoucher.Handle, EditVoucher.Handle).
	Warming error
}

// CreateVoucherCmd is what an admin asks for when putting a voucher on sale.
type CreateVoucherCmd struct {
	Title        string
	Stock        int
	BeginsAt     time.Time
	EndsAt       time.Time
	PerUserLimit int
	// The admission settings (domain.Voucher documents them); those left zero get
	// the mode's defaults (domain.Voucher.WithAdmissionDefaults).
	Admission     domain.Admission
	Challenge     domain.ChallengeKind
	PowDifficulty int
	QueueOpensAt  time.Time
	QueueWindow   int
	EntriesOpenAt time.Time
	// CampaignID, when not 0, makes the voucher the campaign's next one: it takes the
	// campaign's window, admission and challenge (those above are then left zero).
	CampaignID domain.CampaignID
	// By is who creates it, for the audit log.
	By domain.Author
	// Receipt, when set, is the request's idempotency key: the voucher and the
	// request's answer, rendered from the LiveVoucher Handle returns, are stored
	// together, or neither.
	Receipt *ports.Receipt[LiveVoucher]
}

// CreateVoucher stores a new voucher and loads its stock for the grab path.
type CreateVoucher struct {
	vouchers ports.Vouchers
	stock    ports.Stock
	clock    ports.Clock
	// campaigns and cstock: WithCampaigns.
	campaigns ports.Campaigns
	cstock    ports.CampaignStock
}

// WithCampaigns lets the use case create a campaign's vouchers, and give the grab
// path the campaign's new count of vouchers with each. Without it the use case knows
// no campaign: a voucher asked for in one is a *domain.ValidationError (no such
// campaign).
func (uc *CreateVoucher) WithCampaigns(campaigns ports.Campaigns, cstock ports.CampaignStock) *CreateVoucher {
	uc.campaigns, uc.cstock = campaigns, cstock
	return uc
}

// NewCreateVoucher returns the use case; clock says whether a sale has ended already.
func NewCreateVoucher(vouchers ports.Vouchers, stock ports.Stock, clock ports.Clock) *CreateVoucher {
	return &CreateVoucher{vouchers: vouchers, stock: stock, clock: clock}
}

// Handle validates and stores the voucher (with its audit entry, and the receipt's
// answer when the command has one), then warms its stock (only if absent, so a live
// counter is never reset). It returns a *domain.ValidationError for a bad command, a
// sale that has ended already included, and ports.ErrClaimLost when the receipt's claim
// no longer holds its key.
// Once the voucher is stored the creation has succeeded: if warming fails, the voucher
// is returned all the same, Warming reports it, and the sale state is loaded later —
// by the first grab (GrabVoucher rebuilds a missing state, answering unavailable
// meanwhile) or by the periodic warm-up (WarmVouchers), whichever comes first. So an
// error always means that nothing was stored.
func (uc *CreateVoucher) Handle(ctx context.Context, cmd CreateVoucherCmd) (LiveVoucher, error) {
	v := domain.Voucher{
		Title:        cmd.Title,
		Stock:        cmd.Stock,
		BeginsAt:     cmd.BeginsAt.UTC(),
		EndsAt:       cmd.EndsAt.UTC(),
		PerUserLimit: cmd.PerUserLimit,

		Admission:     cmd.Admission,
		Challenge:     cmd.Challenge,
		PowDifficulty: cmd.PowDifficulty,
		QueueOpensAt:  cmd.QueueOpensAt.UTC(),
		QueueWindow:   cmd.QueueWindow,
		EntriesOpenAt: cmd.EntriesOpenAt.UTC(),
	}
	now := uc.clock.Now()
	var campaign domain.Campaign
	if cmd.CampaignID != 0 {
		var err error
		if v, campaign, err = uc.variant(ctx, v, cmd.CampaignID); err != nil {
			return LiveVoucher{}, err
		}
	} else {
		v = v.WithAdmissionDefaults(now)
	}
	if v.Admission.Shuffled() && v.Seed == domain.NoSeed {
		v.Seed = domain.NewSeed()
	}
	if err := v.ValidateNew(now); err != nil {
		return LiveVoucher{}, err
	}
	// The new voucher is answered as it stands at now, every unit on sale: the answer
	// the receipt keeps and the one returned are the same.
	created := func(v domain.Voucher) LiveVoucher {
		return LiveVoucher{Voucher: v, Remaining: v.Stock, State: v.State(now, v.Stock)}
	}
	var receipt *ports.Receipt[domain.Voucher]
	if r := cmd.Receipt; r != nil {
		receipt = &ports.Receipt[domain.Voucher]{Claim: r.Claim, Answer: func(v domain.Voucher) (int, []byte, error) {
			return r.Answer(created(v))
		}}
	}
	if err := uc.vouchers.Create(ctx, &v, cmd.By, receipt); err != nil {
		return LiveVoucher{}, fmt.Errorf("create voucher: %w", err)
	}
	live := created(v)
	if _, err := uc.stock.Warm(ctx, v); err != nil {
		live.Warming = fmt.Errorf("warm voucher %s: %w", v.ID, err)
		return live, nil
	}
	if cmd.CampaignID != 0 {
		// The voucher's state first, then the campaign's count that takes it in: a
		// count naming a voucher without state would stop the campaign's grabs until
		// a rebuild.
		_, campaign.Variants = v.ID.Campaign()
		if err := uc.cstock.WarmCampaign(ctx, campaign); err != nil {
			live.Warming = err
		}
	}
	return live, nil
}

// variant returns v as the next voucher of campaign id would be (the repository
// numbers it under the campaign's lock), and the campaign, to validate it before it
// is stored.
func (uc *CreateVoucher) variant(ctx context.Context, v domain.Voucher, id domain.CampaignID) (domain.Voucher, domain.Campaign, error) {
	if uc.campaigns == nil {
		return v, domain.Campaign{}, domain.Invalid("campaign_id", "no such campaign")
	}
	c, err := uc.campaigns.Get(ctx, id)
	if errors.Is(err, domain.ErrNotFound) {
		return v, c, domain.Invalid("campaign_id", "no such campaign")
	}
	if err != nil {
		return v, c, fmt.Errorf("campaign %s: %w", id, err)
	}
	next, err := c.Variant(v)
	if err != nil {
		return v, c, err
	}
	// The repository gives the id under the campaign's lock.
	next.ID = 0
	return next, c, nil
}

// voucherReads is what the use cases that answer vouchers share: the stores they read
// and the clock that judges each sale's state.
type voucherReads struct {
	vouchers ports.Vouchers
	stock    ports.Stock
	clock    ports.Clock
}

// live answers vs with their remaining units and states (withRemaining).
func (r voucherReads) live(ctx context.Context, vs ...domain.Voucher) ([]LiveVoucher, error) {
	return withRemaining(ctx, r.stock, r.clock, vs)
}

// GetVoucher reads one voucher with its live remaining stock.
type GetVoucher struct{ voucherReads }

// NewGetVoucher returns the use case; clock judges the sale's state.
func NewGetVoucher(vouchers ports.Vouchers, stock ports.Stock, clock ports.Clock) *GetVoucher {
	return &GetVoucher{voucherReads{vouchers: vouchers, stock: stock, clock: clock}}
}

// Handle returns the voucher, or domain.ErrNotFound.
func (uc *GetVoucher) Handle(ctx context.Context, id domain.VoucherID) (LiveVoucher, error) {
	v, err := uc.vouchers.Get(ctx, id)
	if err != nil {
		return LiveVoucher{}, err
	}
	live, err := uc.live(ctx, v)
	if err != nil {
		return LiveVoucher{}, err
	}
	return live[0], nil
}

// Refresh returns v with its remaining units read again from the stock and its sale's
// state judged again by the clock, without reading the voucher again: what changes
// with every grab and with time, at the cost of one read of the stock. A change of the
// voucher's terms or pause needs Handle.
func (uc *GetVoucher) Refresh(ctx context.Context, v LiveVoucher) (LiveVoucher, error) {
	live, err := uc.live(ctx, v.Voucher)
	if err != nil {
		return LiveVoucher{}, err
	}
	return live[0], nil
}

// ListVouchers reads a page of vouchers with their live remaining stock.
type ListVouchers struct{ voucherReads }

// NewListVouchers returns the use case; clock judges the status filter and the sale's
// state.
func NewListVouchers(vouchers ports.Vouchers, stock ports.Stock, clock ports.Clock) *ListVouchers {
	return &ListVouchers{voucherReads{vouchers: vouchers, stock: stock, clock: clock}}
}

// ListVouchersQuery asks for a page of vouchers.
type ListVouchersQuery struct {
	// Limit is the page size, 1 to MaxPageLimit; 0 means DefaultPageLimit.
	Limit int
	// Cursor is NextCursor of the previous page; empty for the first page.
	Cursor string
	// Status, when not empty, keeps only the vouchers whose sale is "live",
	// "upcoming" or "ended" at the application's clock.
	Status string
}

// VoucherPage is a page of vouchers, newest first.
type VoucherPage struct {
	Vouchers []LiveVoucher
	// NextCursor asks for the next page; empty on the last page.
	NextCursor string
}

// Handle returns a page of vouchers, newest (highest id) first. A limit out of range,
// an unknown status, or a cursor that is not NextCursor of a page of this list under
// the same status returns a *domain.ValidationError.
func (uc *ListVouchers) Handle(ctx context.Context, q ListVouchersQuery) (VoucherPage, error) {
	limit, err := pageLimit(q.Limit)
	if err != nil {
		return VoucherPage{}, err
	}
	status := ports.SaleStatus(q.Status)
	switch status {
	case "", ports.SaleLive, ports.SaleUpcoming, ports.SaleEnded:
	default:
		return VoucherPage{}, domain.Invalid("status", "must be live, upcoming or ended")
	}
	query := ports.VoucherQuery{Status: status, Now: uc.clock.Now(), Limit: limit + 1}
	if q.Cursor != "" {
		if query.Before, err = decodeVoucherCursor(q.Cursor, status); err != nil {
			return VoucherPage{}, err
		}
	}
	// One more than the page tells whether another page follows.
	vs, err := uc.vouchers.List(ctx, query)
	if err != nil {
		return VoucherPage{}, fmt.Errorf("list vouchers: %w", err)
	}
	var page VoucherPage
	if len(vs) > limit {
		vs = vs[:limit]
		page.NextCursor = encodeVoucherCursor(status, vs[limit-1].ID)
	}
	if page.Vouchers, err = uc.live(ctx, vs...); err != nil {
		return VoucherPage{}, err
	}
	return page, nil
}

// withRemaining asks the stock for every voucher's remaining units in one call, and
// judges each sale's state by clock once they are read. A voucher without sale state
// (never warmed, or its keys expired after the sale) reads its remaining units from
// the database's sold counter. Every use case that answers vouchers read from the
// stores answers them through it, so each says its state.
func withRemaining(ctx context.Context, stock ports.Stock, clock ports.Clock, vs []domain.Voucher) ([]LiveVoucher, error) {
	ids := make([]domain.VoucherID, len(vs))
	for i, v := range vs {
		ids[i] = v.ID
	}
	left, err := stock.Remaining(ctx, ids...)
	if err != nil {
		return nil, fmt.Errorf("remaining stock: %w", err)
	}
	now := clock.Now()
	out := make([]LiveVoucher, len(vs))
	for i, v := range vs {
		r, ok := left[v.ID]
		if !ok {
			r = v.Stock - v.Sold
		}
		out[i] = LiveVoucher{Voucher: v, Remaining: r, State: v.State(now, r)}
	}
	return out, nil
}

// WarmVouchers loads the sale state of every voucher whose sale has not ended, each
// only if absent. Start-up runs it, and serve repeats it, so a voucher whose warm-up
// failed at creation, or whose keys a Redis restart lost, goes (back) on sale: with
// its stock less the units of its live orders, and — by RecoverVoucher — their
// reservations recorded so their users cannot grab it twice.
type WarmVouchers struct {
	vouchers ports.Vouchers
	stock    ports.Stock
	recover  *RecoverVoucher
	clock    ports.Clock
}

// NewWarmVouchers returns the use case.
func NewWarmVouchers(vouchers ports.Vouchers, stock ports.Stock, recovery *RecoverVoucher, clock ports.Clock) *WarmVouchers {
	return &WarmVouchers{vouchers: vouchers, stock: stock, recover: recovery, clock: clock}
}

// Handle warms the active vouchers and returns how many it loaded (those already
// loaded are left alone and not counted). It goes in two passes so that every voucher
// serves as soon as it can: first it loads each missing sale state — at once open to
// grabs when no live order holds units, else marked restoring (grabs answer
// unavailable) — then it recovers those marked restoring (RecoverVoucher), the
// vouchers with the fewest live units first, a few at a time, each opening as soon as
// it is whole. A sale state found holding another version of the voucher's terms
// (an edit whose write to the stock did not land) has them carried in
// (RecoverVoucher, RecoverStale). A voucher that fails does not stop the others; the
// first error is returned, and the next Handle (or a grab) tries it again.
func (uc *WarmVouchers) Handle(ctx context.Context) (int, error) {
	vs, err := uc.vouchers.Active(ctx, uc.clock.Now())
	if err != nil {
		return 0, fmt.Errorf("active vouchers: %w", err)
	}
	loaded := 0
	var restoring []domain.Voucher
	var first error
	campaigns := make(map[domain.CampaignID]error)
	for _, v := range vs {
		// A campaign's terms go first, once per campaign: its vouchers' grabs are
		// judged against them.
		if c, _ := v.ID.Campaign(); c != 0 {
			if _, done := campaigns[c]; !done {
				campaigns[c] = uc.recover.warmCampaign(ctx, v.ID)
				first = cmp.Or(first, campaigns[c])
			}
		}
		warmed, err := uc.load(ctx, v)
		if err != nil {
			first = cmp.Or(first, err)
			continue
		}
		switch warmed {
		case ports.WarmLoaded:
			loaded++
		case ports.WarmRestoring:
			loaded++
			restoring = append(restoring, v)
		case ports.WarmStale:
			err := uc.recover.Handle(ctx, RecoverCmd{Voucher: v.ID, Reason: RecoverStale})
			if err != nil && !errors.Is(err, domain.ErrEnded) {
				first = cmp.Or(first, err)
			}
		}
	}
	return loaded, cmp.Or(first, uc.restore(ctx, restoring))
}

// restore recovers the vouchers loaded restoring, the fewest live units first, a few
// at a time: the small ones open within moments, whatever a big one costs. It returns
// the first error.
func (uc *WarmVouchers) restore(ctx context.Context, restoring []domain.Voucher) error {
	slices.SortFunc(restoring, func(a, b domain.Voucher) int { return cmp.Compare(a.Sold, b.Sold) })
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		slot  = make(chan struct{}, parallelRestores)
	)
	for _, v := range restoring {
		slot <- struct{}{}
		wg.Go(func() {
			defer func() { <-slot }()
			err := uc.recover.Handle(ctx, RecoverCmd{Voucher: v.ID, Reason: RecoverMissing})
			if err != nil && !errors.Is(err, domain.ErrEnded) {
				mu.Lock()
				first = cmp.Or(first, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}

// parallelRestores is how many vouchers Handle recovers at once.
const parallelRestores = 4

// load loads v's sale state only if absent and says what it found (see
// ports.Stock.Warm).
func (uc *WarmVouchers) load(ctx context.Context, v domain.Voucher) (ports.WarmOutcome, error) {
	warmed, err := uc.stock.Warm(ctx, v)
	if err != nil {
		return warmed, fmt.Errorf("warm voucher %s: %w", v.ID, err)
	}
	if warmed == ports.WarmPresent || warmed == ports.WarmStale {
		// Already loaded: keep its paused flag in step with the database, in case
		// PauseSale stored one but could not reach Redis.
		if _, err := uc.stock.SetPaused(ctx, v.ID, v.Paused); err != nil {
			return warmed, fmt.Errorf("voucher %s: %w", v.ID, err)
		}
	}
	return warmed, nil
}

// PauseSaleCmd is an admin's pause (or resume) of a voucher's sale.
type PauseSaleCmd struct {
	Voucher domain.VoucherID
	// Paused stops the sale's grabs; false resumes them.
	Paused bool
	// By is who makes the change, for the audit log.
	By domain.Author
}

// PauseSale is the operator's kill switch: it stops (or resumes) a voucher's grabs.
type PauseSale struct {
	voucherReads
	changes ports.Changes
}

// NewPauseSale returns the use case; clock judges the sale's state it answers, and
// each pause and resume stored is announced on changes.
func NewPauseSale(vouchers ports.Vouchers, stock ports.Stock, clock ports.Clock, changes ports.Changes) *PauseSale {
	return &PauseSale{voucherReads{vouchers: vouchers, stock: stock, clock: clock}, changes}
}

// Handle records the flag in the database (the source of truth), with the audit
// entry of the change by cmd.By (none when the flag was so already), then sets it on the
// grab path. It returns the voucher, or domain.ErrNotFound. Once the flag is stored
// the pause has happened, as an edit has: when the grab path cannot be told (Redis
// unreachable, when no grab is served either), the voucher is returned all the same,
// as the database has it, Warming says why, and the heal after a Redis restart or the
// periodic warm-up carries the flag to Redis once it answers.
func (uc *PauseSale) Handle(ctx context.Context, cmd PauseSaleCmd) (LiveVoucher, error) {
	id, paused := cmd.Voucher, cmd.Paused
	action := domain.AuditVoucherResume
	if paused {
		action = domain.AuditVoucherPause
	}
	v, err := uc.vouchers.Update(ctx, id, ports.VoucherUpdate{Action: action, By: cmd.By,
		Change: func(v domain.Voucher) (domain.Voucher, error) {
			v.Paused = paused
			return v, nil
		}})
	if err != nil {
		return LiveVoucher{}, err
	}
	// Announced once Redis holds the flag too (the streams read the sale's state
	// from both), or has failed to: the database's change stands either way.
	defer publish(ctx, uc.changes, ports.Change{Voucher: id})
	if _, err := uc.stock.SetPaused(ctx, id, paused); err != nil {
		return uc.stored(v, fmt.Errorf("set the paused flag of voucher %s on the grab path: %w", id, err)), nil
	}
	live, err := uc.live(ctx, v)
	if err != nil {
		return uc.stored(v, err), nil
	}
	return live[0], nil
}

// stored answers v as the database has it, the grab path not read: why in warming.
func (uc *PauseSale) stored(v domain.Voucher, warming error) LiveVoucher {
	left := v.Stock - v.Sold
	return LiveVoucher{Voucher: v, Remaining: left, State: v.State(uc.clock.Now(), left), Warming: warming}
}
