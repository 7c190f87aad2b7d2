package application

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// RecoverReason says why a voucher's sale state is recovered. The steps are the same
// whatever the reason; it names the recovery in logs and metrics.
type RecoverReason string

// The reasons a voucher's sale state is recovered.
const (
	// RecoverMissing: the stock has no sale state, or a partial or unfinished one, for
	// a voucher on sale (never warmed, lost with a Redis that came back empty, or a
	// recovery that died midway): the warm-up, a grab or reconciliation found it so.
	RecoverMissing RecoverReason = "missing"
	// RecoverRestarted: the Redis server behind the stock changed — it restarted,
	// perhaps from an older snapshot, or a replica that was behind took over — so
	// whatever state it holds may be stale.
	RecoverRestarted RecoverReason = "restarted"
	// RecoverStale: the sale state is there and whole but holds another version of
	// the voucher's terms (stock, window, limit) than the database: an edit whose
	// write to the stock was lost (the process died between the database and Redis,
	// or Redis could not be reached after the commit). The warm-up found it so.
	RecoverStale RecoverReason = "stale"
)

// RecoverReasons lists every RecoverReason, for those who report each one.
var RecoverReasons = []RecoverReason{RecoverMissing, RecoverRestarted, RecoverStale}

// RecoverCmd names the voucher to recover and why.
type RecoverCmd struct {
	Voucher domain.VoucherID
	Reason  RecoverReason
}

// RecoverVoucher is the one way a voucher's sale state is healed: it makes the stock
// equal to what the database says, whatever the stock held. Every path that finds a
// sale state missing or suspect calls it — the warm-up, a grab that finds none,
// reconciliation's repair, and the heal after Redis restarted or failed over.
//
// The steps, always in this order:
//
//  1. Warm: load the sale state if it is absent (stock, the units the database's live
//     orders do not hold, the window, the limit, the paused flag). A state loaded
//     with no unit held by a live order is whole at once, and the recovery ends. A
//     sale that has ended is not loaded again; while its state is still there it is
//     healed all the same.
//  2. Terms: a state that was there takes the database's terms — stock, window,
//     limit and their version (Stock.Edit, EditHeld), under the voucher's lock
//     (Vouchers.Hold), so no edit under way is undone — its remaining units moving
//     by the change of stock, and the database's paused flag. For a stale state
//     (RecoverStale: only the terms went astray, never the reservations) the
//     recovery ends here: grabs never wait for it.
//  3. Restoring: grabs of the voucher answer unavailable from here to step 7, so no
//     user who holds an order can grab again and no phantom unit is sold.
//  4. Ledger: read every order of the voucher from the database — after step 1, so
//     an order that closes from now on releases into this state (Stock.Release), and
//     its release marks it closed for good there.
//  5. Restore: make the stock agree with each order (StockAudit.Restore): a live
//     order's reservation is its user's, replacing whatever the user's entry named; a
//     closed order's is forgotten. An order that closed after step 4 was marked
//     released by its own release and is not recorded again.
//  6. Recount: remaining = stock − the units the recorded reservations hold.
//  7. Restored: grabs are taken again.
//
// Each step is idempotent, and every run makes the stock agree with a database read
// taken after it began, so two instances recovering the same voucher at once end in
// the same state. In this process recoveries of one voucher run one at a time; a
// caller whose request comes while one runs shares the next run, which starts after
// its request, rather than the one in flight.
type RecoverVoucher struct {
	// campaigns and cstock, when set, load a campaign's terms with its vouchers'
	// states (WithCampaigns).
	campaigns ports.Campaigns
	cstock    ports.CampaignStock
	vouchers  ports.Vouchers
	stock     ports.Stock
	audit     ports.StockAudit
	ledger    ports.OrderAudit
	clock     ports.Clock
	runs      *recoveryRuns
	observe   func(RecoverReason, error)
}

// NewRecoverVoucher returns the use case; clock tells whether a sale has ended.
func NewRecoverVoucher(vouchers ports.Vouchers, stock ports.Stock, audit ports.StockAudit, ledger ports.OrderAudit, clock ports.Clock) *RecoverVoucher {
	return &RecoverVoucher{vouchers: vouchers, stock: stock, audit: audit, ledger: ledger, clock: clock,
		runs: newRecoveryRuns(), observe: func(RecoverReason, error) {}}
}

// WithCampaigns makes the recovery of a campaign's voucher load the campaign's terms
// first (ports.CampaignStock.WarmCampaign: its cap, its per-user limit, how many
// vouchers it holds), and a grab's rebuild (Start) recover every voucher of the
// campaign that has no sale state: a grab of one is judged against all of them. Call
// it before the use case is in use; without it a campaign's voucher is never judged
// (its grabs answer not found).
func (uc *RecoverVoucher) WithCampaigns(campaigns ports.Campaigns, cstock ports.CampaignStock) *RecoverVoucher {
	uc.campaigns, uc.cstock = campaigns, cstock
	return uc
}

// Observe makes every recovery that ran report its reason and outcome to fn. Call it
// before the use case is in use.
func (uc *RecoverVoucher) Observe(fn func(RecoverReason, error)) {
	uc.observe = fn
}

// Handle recovers the voucher cmd names and returns once its sale state is whole. A
// voucher whose sale has ended is made whole only while its sale state is still there
// (its keys outlive the sale a while, and its stats read them): nothing is loaded for
// it. It returns domain.ErrNotFound for a voucher the database does not have and
// domain.ErrEnded for an ended sale without sale state; on any other error the
// voucher may be left answering grabs unavailable, until a later recovery succeeds.
func (uc *RecoverVoucher) Handle(ctx context.Context, cmd RecoverCmd) error {
	v, err := uc.vouchers.Get(ctx, cmd.Voucher)
	if err != nil {
		return err
	}
	return uc.runs.do(v.ID, func() error {
		err := uc.recover(ctx, v.ID, cmd.Reason)
		uc.observe(cmd.Reason, err)
		return err
	})
}

// Start is Handle for a grab that found no sale state, which must answer at once: it
// reads the voucher and, when no live order holds its units, recovers it (that is one
// Warm) and reports whole. Otherwise restoring the live orders' reservations may take
// a while: it starts the recovery in the background, where no grab waits for it,
// and reports not whole (the grab answers unavailable; a retry is served once the
// state is whole). It returns domain.ErrNotFound and domain.ErrEnded as Handle does.
//
// For a campaign's voucher it does so for each voucher of the campaign without sale
// state (WithCampaigns), and reports whole only when all of them are.
func (uc *RecoverVoucher) Start(ctx context.Context, id domain.VoucherID) (whole bool, err error) {
	v, err := uc.onSale(ctx, id)
	if err != nil {
		return false, err
	}
	c, ok, err := campaignOf(ctx, uc.campaigns, id)
	if err != nil || !ok {
		return uc.start(ctx, v), err
	}
	left, err := uc.stock.Remaining(ctx, c.VoucherIDs()...)
	if err != nil {
		return false, fmt.Errorf("campaign %s: %w", c.ID, err)
	}
	whole = uc.start(ctx, v)
	for _, sibling := range c.VoucherIDs() {
		if _, present := left[sibling]; present || sibling == id {
			continue
		}
		s, err := uc.vouchers.Get(ctx, sibling)
		if err != nil {
			return false, err
		}
		whole = uc.start(ctx, s) && whole
	}
	return whole, nil
}

// start recovers v: at once when no live order holds its units (reporting whole
// when that succeeded), else in the background (reporting not whole).
func (uc *RecoverVoucher) start(ctx context.Context, v domain.Voucher) bool {
	cmd := RecoverCmd{Voucher: v.ID, Reason: RecoverMissing}
	if v.Sold == 0 {
		return uc.Handle(ctx, cmd) == nil
	}
	// The grab's context ends with its answer; the recovery outlives it.
	go func() { _ = uc.Handle(context.WithoutCancel(ctx), cmd) }()
	return false
}

// onSale reads voucher id, or says it is unknown or its sale has ended.
func (uc *RecoverVoucher) onSale(ctx context.Context, id domain.VoucherID) (domain.Voucher, error) {
	v, err := uc.vouchers.Get(ctx, id)
	if err != nil {
		return domain.Voucher{}, err
	}
	if !uc.clock.Now().Before(v.EndsAt) {
		return v, domain.ErrEnded
	}
	return v, nil
}

// recover runs the steps of RecoverVoucher on voucher id, read afresh: a run that
// waited for another must not act on what its caller read before.
func (uc *RecoverVoucher) recover(ctx context.Context, id domain.VoucherID, reason RecoverReason) error {
	v, err := uc.vouchers.Get(ctx, id)
	if err != nil {
		return fmt.Errorf("voucher %s: %w", id, err)
	}
	if err := uc.warmCampaign(ctx, id); err != nil {
		return err
	}
	if !uc.clock.Now().Before(v.EndsAt) {
		// Ended: nothing is loaded again, but a state still there is made whole.
		left, err := uc.stock.Remaining(ctx, id)
		if err != nil {
			return fmt.Errorf("voucher %s: %w", id, err)
		}
		if _, present := left[id]; !present {
			return domain.ErrEnded
		}
	} else {
		warmed, err := uc.stock.Warm(ctx, v)
		if err != nil {
			return fmt.Errorf("warm voucher %s: %w", id, err)
		}
		if warmed == ports.WarmLoaded {
			// Loaded whole just now: no live order holds units, nothing to restore.
			return nil
		}
	}
	if err := uc.carryTerms(ctx, id); err != nil {
		return err
	}
	if reason == RecoverStale {
		return nil
	}
	if err := uc.audit.Restoring(ctx, id); err != nil {
		return fmt.Errorf("voucher %s: %w", id, err)
	}
	ledger, err := uc.ledger.Ledger(ctx, id)
	if err != nil {
		return fmt.Errorf("voucher %s: %w", id, err)
	}
	if len(ledger.Orders) > 0 {
		if _, err := uc.audit.Restore(ctx, ledger.Orders...); err != nil {
			return fmt.Errorf("voucher %s: restore its orders: %w", id, err)
		}
	}
	if _, err := uc.audit.Recount(ctx, id); err != nil && !errors.Is(err, domain.ErrNotFound) {
		return fmt.Errorf("voucher %s: %w", id, err)
	}
	if err := uc.audit.Restored(ctx, id); err != nil {
		return fmt.Errorf("voucher %s: %w", id, err)
	}
	return nil
}

// warmCampaign loads the terms of voucher id's campaign, when it has one, unless the
// stock holds them at their version or a later one: before the voucher's own state,
// so a grab is never judged against a campaign the stock does not hold.
func (uc *RecoverVoucher) warmCampaign(ctx context.Context, id domain.VoucherID) error {
	c, ok, err := campaignOf(ctx, uc.campaigns, id)
	if err != nil || !ok {
		return err
	}
	if err := uc.cstock.WarmCampaign(ctx, c); err != nil {
		return fmt.Errorf("voucher %s: %w", id, err)
	}
	return nil
}

// carryTerms makes a sale state that was there hold the database's terms of voucher
// id and its paused flag (step 2), read under the voucher's lock: a state older (or
// newer: an edit that wrote to Redis and then failed to commit) than the database's
// terms takes them, whatever version it held.
func (uc *RecoverVoucher) carryTerms(ctx context.Context, id domain.VoucherID) error {
	err := uc.vouchers.Hold(ctx, id, func(ctx context.Context, v domain.Voucher) error {
		if _, err := uc.stock.Edit(ctx, v, ports.EditHeld); err != nil {
			return err
		}
		_, err := uc.stock.SetPaused(ctx, id, v.Paused)
		return err
	})
	if err != nil {
		return fmt.Errorf("voucher %s: carry its terms: %w", id, err)
	}
	return nil
}

// recoveryRuns runs the recoveries of each voucher one at a time, and lets the
// callers who ask while one runs share the next run.
type recoveryRuns struct {
	mu       sync.Mutex
	vouchers map[domain.VoucherID]*recoveryRun
}

// recoveryRun is the state of one voucher's recoveries.
type recoveryRun struct {
	// requested counts the requests; started is the count a running run covers
	// (every request up to it came before the run began); finished the count the
	// last finished run covered, and err its outcome.
	requested, started, finished uint64
	running                      bool
	err                          error
	// waiters counts the callers inside do, so the entry is dropped with the last.
	waiters int
	changed *sync.Cond
}

func newRecoveryRuns() *recoveryRuns {
	return &recoveryRuns{vouchers: make(map[domain.VoucherID]*recoveryRun)}
}

// do runs fn for voucher id unless a run that began after this call began finishes
// first, and returns the outcome of the run that covered this call.
func (r *recoveryRuns) do(id domain.VoucherID, fn func() error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	run, ok := r.vouchers[id]
	if !ok {
		run = &recoveryRun{changed: sync.NewCond(&r.mu)}
		r.vouchers[id] = run
	}
	run.requested++
	mine := run.requested
	run.waiters++
	defer func() {
		run.waiters--
		if run.waiters == 0 {
			delete(r.vouchers, id)
		}
	}()
	for run.finished < mine {
		if run.running {
			run.changed.Wait()
			continue
		}
		run.running, run.started = true, run.requested
		r.mu.Unlock()
		err := fn()
		r.mu.Lock()
		run.running, run.finished, run.err = false, run.started, err
		run.changed.Broadcast()
	}
	return run.err
}
