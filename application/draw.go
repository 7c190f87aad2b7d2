package application

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// EnterDraw is the use case of a draw's entry: a user enters a draw voucher from its
// entries_open_at until its begins_at, once however often it asks; or a campaign's
// draw (a drop's), naming the voucher it chooses, its latest choice standing.
type EnterDraw struct {
	entries ports.Entries
	gate    *BuyerGate
}

// NewEnterDraw returns the use case: entries keeps the entries, gate checks each
// entrant (DoorDraw) and reads the vouchers a drop's entrant chooses from.
func NewEnterDraw(entries ports.Entries, gate *BuyerGate) *EnterDraw {
	return &EnterDraw{entries: entries, gate: gate}
}

// EnterDrawCmd is one user's entry in a voucher's draw, or in a campaign's (VoucherID
// the campaign's room id, domain.CampaignID.Room).
type EnterDrawCmd struct {
	VoucherID domain.VoucherID
	UserID    domain.UserID
	// Choice is the voucher a campaign's entrant chooses; 0 for a voucher's draw.
	Choice domain.VoucherID
	// Proof is the client's solution of the voucher's challenge; "" for none.
	Proof string
}

// Handle enters the user in the voucher's draw and returns how many users have
// entered. The gate refuses first (BuyerGate, DoorDraw): a *domain.ValidationError,
// domain.ErrDenied, domain.ErrNotFound, domain.ErrNotDraw (a voucher of another
// admission mode), domain.ErrChallengeRequired (a voucher that asks for a challenge,
// without a valid proof, which it spends); then the entries: domain.ErrNotStarted
// (before entries_open_at), domain.ErrEntriesClosed (from begins_at),
// domain.ErrDrawUnsupported, or an error wrapping domain.ErrUnavailable. A
// campaign's entry without a choice, or choosing a voucher not of the campaign,
// answers a *domain.ValidationError naming voucher_id, before the gate.
func (uc *EnterDraw) Handle(ctx context.Context, cmd EnterDrawCmd) (int, error) {
	camp, drop := cmd.VoucherID.CampaignRoom()
	if drop {
		if c, k := cmd.Choice.Campaign(); c != camp || k == 0 {
			return 0, domain.Invalid("voucher_id", "must be the id of a voucher of this campaign")
		}
	}
	b, err := uc.gate.Check(ctx, BuyerCommand{Door: DoorDraw, VoucherID: cmd.VoucherID, UserID: cmd.UserID, Proof: cmd.Proof})
	if err != nil {
		return 0, err
	}
	if !drop {
		return uc.entries.Enter(ctx, b.Voucher, cmd.UserID)
	}
	if _, err := uc.gate.rooms.Cached(ctx, cmd.Choice); errors.Is(err, domain.ErrNotFound) {
		return 0, domain.Invalid("voucher_id", "must be the id of a voucher of this campaign")
	} else if err != nil {
		return 0, err
	}
	return uc.entries.EnterDrop(ctx, b.Voucher, cmd.UserID, cmd.Choice)
}

// DrawState is what GET …/draw publishes: the commitment always, the entrants so far
// before the draw; after it, the seed, the digest and the winners too.
type DrawState struct {
	Voucher    domain.Voucher
	Entrants   int
	Draw       *domain.Draw
	Winners    []domain.UserID
	Commitment string
}

// GetDraw is the use case of a draw's public record.
type GetDraw struct {
	draws   ports.Draws
	entries ports.Entries
	rooms   *RoomSales
}

// NewGetDraw returns the use case; rooms reads the draw's sale (a voucher's, or a
// campaign's by its room id).
func NewGetDraw(draws ports.Draws, entries ports.Entries, rooms *RoomSales) *GetDraw {
	return &GetDraw{draws: draws, entries: entries, rooms: rooms}
}

// Handle returns voucher's draw state (a campaign's, by its room id):
// domain.ErrNotFound for an unknown voucher or campaign, domain.ErrNotDraw for one of
// another mode, or a campaign's voucher (drawn in its campaign's draw). Before the
// draw the entrants are counted in the entries (domain.ErrDrawUnsupported or an error
// wrapping domain.ErrUnavailable when they cannot be); after it everything comes from
// the recorded draw.
func (uc *GetDraw) Handle(ctx context.Context, voucher domain.VoucherID) (DrawState, error) {
	v, err := uc.rooms.Get(ctx, voucher)
	if err != nil {
		return DrawState{}, err
	}
	if v.Admission != domain.AdmissionDraw || v.ID.Room() != v.ID {
		return DrawState{}, domain.ErrNotDraw
	}
	st := DrawState{Voucher: v, Commitment: v.Commitment()}
	d, err := uc.draws.Get(ctx, voucher)
	switch {
	case err == nil:
		st.Draw, st.Entrants = &d, len(d.Entrants)
		st.Winners = d.WinnerIDs()
		return st, nil
	case !errors.Is(err, domain.ErrNotFound):
		return DrawState{}, err
	}
	if st.Entrants, err = uc.entries.Count(ctx, voucher); err != nil {
		return DrawState{}, err
	}
	return st, nil
}

// DrawOptions tune RunDraws; the zero value takes the defaults.
type DrawOptions struct {
	// Batch is how many steps one call to the store takes (default 1000).
	Batch int
	// Lease is how long the drawing instance holds the draws' lease without renewing
	// it (default 15 s); it renews it before each batch.
	Lease time.Duration
}

// DrawObserver is told what RunDraws did; a nil func is skipped.
type DrawObserver struct {
	// Drawn is called once per draw carried out to its end by this instance, with its
	// entrants, winners and how long carrying it out took.
	Drawn func(entrants, winners int, took time.Duration)
}

// drawLease names the lease only the drawing instance holds.
const drawLease = "draws"

// RunDraws runs the draws of the vouchers whose sale has begun, on one instance at a
// time (the holder of a lease). A draw is recorded (ports.Draws) before any of its
// orders exists, then carried out a batch at a time (ports.Entries.Take), each batch
// counted taken in the step that takes it: an instance that dies mid-draw leaves the
// rest to the next holder of the lease, which carries out the same recorded draw from
// where it stopped, nothing twice and nothing lost.
//
// Each step's order id is derived from the draw and the step (ports.OrderIDs
// DerivedOrderID), the same on every run: when Redis forgets a draw's progress, the
// heal restores the voucher's orders from the database (a closed one among the
// released orders) and the draw is carried out again from its start, and a step
// whose order is held, or was released (its user cancelled, or let it expire), is
// passed over — no user is served twice by one draw.
type RunDraws struct {
	draws   ports.Draws
	entries ports.Entries
	leases  ports.Leases
	ids     ports.OrderIDs
	clock   ports.Clock
	rooms   *RoomSales
	holder  string
	opts    DrawOptions
	obs     DrawObserver
	// drops keeps the vouchers of each drop whose draw was pending (its sale begun: it
	// takes no voucher more), so a round reads them once.
	drops map[domain.CampaignID][]domain.VoucherID
}

// NewRunDraws returns the use case; rooms reads a campaign's draw's vouchers, holder
// names this instance in the lease.
func NewRunDraws(draws ports.Draws, entries ports.Entries, leases ports.Leases, ids ports.OrderIDs, clock ports.Clock,
	rooms *RoomSales, holder string, opts DrawOptions, obs DrawObserver) *RunDraws {
	if opts.Batch <= 0 {
		opts.Batch = 1000
	}
	if opts.Lease <= 0 {
		opts.Lease = 15 * time.Second
	}
	return &RunDraws{draws: draws, entries: entries, leases: leases, ids: ids, clock: clock, rooms: rooms, holder: holder,
		opts: opts, obs: obs, drops: map[domain.CampaignID][]domain.VoucherID{}}
}

// errLeaseLost stops a draw whose lease another instance took.
var errLeaseLost = errors.New("the draws' lease passed to another instance")

// Handle runs one round: it carries out every pending draw not carried out yet, when
// this instance holds (or takes) the lease, and returns how many it finished. It keeps
// the lease between rounds while it finds draws to run and gives it up when it finds
// none. It is not safe for concurrent use (one loop calls it).
//
// A campaign's draw (a drop's, pending as the campaign's room) is recorded as a
// voucher's is (domain.NewDropDraw: the entrants with their choices, walked against
// the vouchers' stocks and the cap as they stand then), and carried out as one part
// per voucher (domain.Draw.DropSteps), each taken on that voucher's sale state; the
// vouchers open to grabs together once every part is taken (ports.Entries.Take).
func (uc *RunDraws) Handle(ctx context.Context) (int, error) {
	pending, err := uc.draws.Pending(ctx, uc.clock.Now())
	if err != nil || len(pending) == 0 {
		return 0, err
	}
	var todo []domain.Voucher
	for _, v := range pending {
		undone, err := uc.undone(ctx, v)
		if err != nil {
			return 0, err
		}
		if undone {
			todo = append(todo, v)
		}
	}
	if len(todo) == 0 {
		return 0, nil
	}
	if ok, err := uc.renew(ctx); err != nil || !ok {
		return 0, err
	}
	done := 0
	for _, v := range todo {
		if err := uc.run(ctx, v); err != nil {
			if errors.Is(err, errLeaseLost) {
				return done, nil
			}
			return done, fmt.Errorf("draw of voucher %s: %w", v.ID, err)
		}
		done++
	}
	if err := uc.leases.Release(ctx, drawLease, uc.holder); err != nil {
		return done, fmt.Errorf("give the draws' lease up: %w", err)
	}
	return done, nil
}

// undone reports whether v's draw (a campaign's, by its room) is still to be carried
// out: some of its steps not taken, on sale state loaded (the warm-up loads it).
func (uc *RunDraws) undone(ctx context.Context, v domain.Voucher) (bool, error) {
	ids := []domain.VoucherID{v.ID}
	if c, ok := v.ID.CampaignRoom(); ok {
		if ids, ok = uc.drops[c]; !ok {
			camp, _, err := uc.rooms.Drop(ctx, c)
			if err != nil {
				return false, err
			}
			ids = camp.VoucherIDs()
			uc.drops[c] = ids
		}
	}
	undone := false
	for _, id := range ids {
		_, drawn, err := uc.entries.Progress(ctx, id)
		if errors.Is(err, domain.ErrNotFound) || errors.Is(err, domain.ErrDrawUnsupported) {
			return false, nil // its sale state is not loaded yet, or no draws run here
		}
		if err != nil {
			return false, err
		}
		undone = undone || !drawn
	}
	return undone, nil
}

// renew takes or renews the lease.
func (uc *RunDraws) renew(ctx context.Context) (bool, error) {
	_, ok, err := uc.leases.Acquire(ctx, drawLease, uc.holder, uc.opts.Lease)
	if err != nil {
		return false, fmt.Errorf("take the draws' lease: %w", err)
	}
	return ok, nil
}

// run records v's draw (unless recorded) and carries it out from where it stands.
func (uc *RunDraws) run(ctx context.Context, v domain.Voucher) error {
	start := time.Now()
	d, err := uc.draws.Get(ctx, v.ID)
	if errors.Is(err, domain.ErrNotFound) {
		d, err = uc.record(ctx, v)
		if errors.Is(err, domain.ErrNotStarted) {
			return nil // this host's clock runs ahead of the sale's: next round
		}
	}
	if err != nil {
		return err
	}
	if d.Drop == nil {
		if err := uc.carry(ctx, d, v.ID, domain.DrawSteps(d.Order(), d.Winners), nil); err != nil {
			return err
		}
	} else {
		parts := d.DropSteps()
		c, _ := v.ID.Campaign()
		for k := range d.Drop.Units {
			id := c.Variant(k + 1)
			if err := uc.carry(ctx, d, id, parts[id].Steps, parts[id].Places); err != nil {
				return err
			}
		}
	}
	if uc.obs.Drawn != nil {
		uc.obs.Drawn(len(d.Entrants), d.Winners, time.Since(start))
	}
	return nil
}

// record closes v's entries and records its draw: a voucher's, or a campaign's (v
// its room) walked against its vouchers and cap as they stand now.
func (uc *RunDraws) record(ctx context.Context, v domain.Voucher) (domain.Draw, error) {
	c, drop := v.ID.CampaignRoom()
	if !drop {
		entrants, err := uc.entries.Close(ctx, v)
		if err != nil {
			return domain.Draw{}, err
		}
		return uc.draws.Record(ctx, domain.NewDraw(v, entrants, uc.clock.Now()))
	}
	entries, err := uc.entries.CloseDrop(ctx, v)
	if err != nil {
		return domain.Draw{}, err
	}
	camp, variants, err := uc.rooms.Drop(ctx, c)
	if err != nil {
		return domain.Draw{}, err
	}
	return uc.draws.Record(ctx, domain.NewDropDraw(camp, variants, entries, uc.clock.Now()))
}

// carry takes steps, draw d's steps on voucher id, from where id's progress stands,
// a batch at a time. Step i's order id is derived from d's step key of places[i]
// (i itself when places is nil). A voucher whose sale state is not loaded is left for
// a later round.
func (uc *RunDraws) carry(ctx context.Context, d domain.Draw, id domain.VoucherID, steps []domain.DrawStep, places []int) error {
	taken, drawn, err := uc.entries.Progress(ctx, id)
	if errors.Is(err, domain.ErrNotFound) {
		return nil
	}
	if err != nil || drawn {
		return err
	}
	for {
		end := min(taken+uc.opts.Batch, len(steps))
		batch := steps[taken:end]
		orders := make([]domain.OrderID, len(batch))
		for i := range orders {
			place := taken + i
			if places != nil {
				place = places[place]
			}
			orders[i] = uc.ids.DerivedOrderID(d.At, d.StepKey(place))
		}
		next, _, err := uc.entries.Take(ctx, id, taken, len(steps), batch, orders)
		if err != nil {
			return err
		}
		if next >= len(steps) {
			return nil
		}
		taken = next
		if ok, err := uc.renew(ctx); err != nil {
			return err
		} else if !ok {
			return errLeaseLost
		}
	}
}
