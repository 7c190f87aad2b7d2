package application

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// GrabVoucherCmd is one user's press of "grab".
type GrabVoucherCmd struct {
	VoucherID domain.VoucherID
	UserID    domain.UserID
	Quantity  int
	// Pass is the waiting room's pass the grab carries, as the client sent it (a
	// token of domain.SignPass); "" for none.
	Pass string
	// Proof is the solved challenge the grab carries, as the client sent it (for a
	// proof of work "<challenge>:<nonce>"); "" for none.
	Proof string
}

// GrabOptions tune the grab path.
type GrabOptions struct {
	// Persisted, when set, makes every grab wait for its order's commit before it is
	// answered (for a stock in this process's memory: see PersistedOrders).
	Persisted *PersistedOrders
	// Passes, when set, is the waiting rooms' store, for a stock that does not use a
	// pass up where the rooms keep it (the postgres strategy): a grab that reserved
	// with a pass then spends it there (ports.WaitingRoom.Spend), so its place in the
	// room's window frees at once. A Redis stock uses it up in the grab's own step.
	Passes ports.WaitingRoom
}

// GrabVoucher is the hot path: it reserves units in one call to the stock, which also
// records the reservation for fulfillment, or in none once the voucher is known to be
// sold out. It never touches the database.
//
// The one exception is a voucher whose sale state the stock does not have (Redis lost
// it, or its keys expired after the sale): the grab that finds it so asks the database
// (see rebuild), once per voucher at a time, so a live voucher is never answered
// not_found and an ended one is answered ended.
type GrabVoucher struct {
	stock    ports.Stock
	clock    ports.Clock
	ids      ports.OrderIDs
	gate     *BuyerGate
	persist  *PersistedOrders
	passes   ports.WaitingRoom
	recovery *RecoverVoucher
	misses   *missFlights
}

// NewGrabVoucher returns the use case. gate checks the buyer first (DoorGrab).
// recovery rebuilds a voucher's missing sale state; with nil, a grab of a voucher
// without one answers domain.ErrNotFound.
func NewGrabVoucher(stock ports.Stock, clock ports.Clock, ids ports.OrderIDs, recovery *RecoverVoucher, gate *BuyerGate,
	opts GrabOptions) *GrabVoucher {
	return &GrabVoucher{stock: stock, clock: clock, ids: ids, gate: gate, persist: opts.Persisted, passes: opts.Passes, recovery: recovery,
		misses: newMissFlights()}
}

// Restocked tells the grab path that units of a voucher came back on sale, so it asks
// Redis again at once instead of waiting for its sold-out flag to lapse.
func (uc *GrabVoucher) Restocked(id domain.VoucherID) {
	uc.gate.Restocked(id)
}

// Handle checks the buyer at the gate (BuyerGate, DoorGrab: the command, the deny
// list, the pass by its signature with no store asked, the sold-out flag, then the
// proof, which the gate spends), mints the order id and reserves; the stock judges
// the grab with what the pass and the proof proved (domain.Reservation Pass and
// Proven; domain.Sale.Judge). A grab that carries neither costs nothing more. With
// GrabOptions.Persisted, a grab that reserved is answered once its order is
// committed, or unavailable when that does not come in time (its reservation stands).
// It returns the reservation, or a *domain.ValidationError, domain.ErrDenied,
// domain.ErrQueueRequired, domain.ErrChallengeRequired, domain.ErrSoldOut, an
// *domain.AlreadyPurchasedError naming the user's existing order, domain.ErrNotStarted,
// domain.ErrEnded, domain.ErrNotFound (no such voucher) or an error wrapping
// domain.ErrUnavailable (among others: the voucher's sale state is being rebuilt).
func (uc *GrabVoucher) Handle(ctx context.Context, cmd GrabVoucherCmd) (domain.Reservation, error) {
	b, err := uc.gate.Check(ctx, BuyerCommand{Door: DoorGrab, VoucherID: cmd.VoucherID, UserID: cmd.UserID,
		Quantity: cmd.Quantity, Pass: cmd.Pass, Proof: cmd.Proof})
	if err != nil {
		return domain.Reservation{}, err
	}
	// No time: the stock judges the grab by the sale's clock at the moment it judges
	// it (see ports.Stock.Reserve), not by this instance's reading before the grab
	// waited for its turn.
	r := domain.Reservation{
		OrderID:   uc.ids.NewOrderID(),
		VoucherID: cmd.VoucherID,
		UserID:    cmd.UserID,
		Quantity:  cmd.Quantity,
		Pass:      b.PassExpires,
		Proven:    b.Proven,
	}
	var committed <-chan struct{}
	if uc.persist != nil {
		committed = uc.persist.expect(r.OrderID)
		defer uc.persist.forget(r.OrderID)
	}
	err = uc.stock.Reserve(ctx, r)
	if errors.Is(err, domain.ErrNotFound) && uc.recovery != nil {
		err = uc.rebuild(ctx, r)
	}
	if err != nil {
		// Only a one-unit grab refused for stock proves that none is left, and only
		// one that brought no pass and no proof proves that the sale has no gate (a
		// gated sale would have refused it first): the flag answers every later grab
		// sold out, and the gates are judged before the units (domain.Sale.Judge).
		if errors.Is(err, domain.ErrSoldOut) && cmd.Quantity == 1 && cmd.Pass == "" && cmd.Proof == "" {
			uc.gate.SoldOut(cmd.VoucherID, b.Now)
		}
		return domain.Reservation{}, err
	}
	if uc.passes != nil && !r.Pass.IsZero() {
		// Best effort: a pass not spent here holds its place in the window until it
		// expires, and admits nothing more (the stock judged it used).
		_ = uc.passes.Spend(context.WithoutCancel(ctx), r.VoucherID.Room(), r.UserID, r.Pass)
	}
	if committed != nil {
		if err := uc.persist.wait(ctx, r.OrderID, committed); err != nil {
			return domain.Reservation{}, err
		}
	}
	return r, nil
}

// rebuild answers a grab of a voucher the stock has no sale state for. The first such
// grab of a voucher asks the database: for a voucher it does not have, not_found; for
// one whose sale ended, ended; otherwise it has the sale state recovered
// (RecoverVoucher.Start: set-if-absent, so instances racing to do it are safe) and,
// once it is whole, tries the grab once more; while live orders' reservations are
// still being restored it answers unavailable. The grabs of the voucher that come
// meanwhile are answered unavailable at once (a retry tells the truth), and those that
// come within a second after a not_found or ended are answered the same without
// asking again.
func (uc *GrabVoucher) rebuild(ctx context.Context, r domain.Reservation) error {
	now := uc.clock.Now()
	answer, first := uc.misses.begin(r.VoucherID, now)
	if !first {
		return answer
	}
	whole, err := uc.recovery.Start(ctx, r.VoucherID)
	switch {
	case errors.Is(err, domain.ErrNotFound), errors.Is(err, domain.ErrEnded):
		uc.misses.end(r.VoucherID, err, now)
		return err
	case err != nil:
		uc.misses.end(r.VoucherID, nil, now)
		return fmt.Errorf("rebuild the sale state of voucher %s: %w: %w", r.VoucherID, domain.ErrUnavailable, err)
	}
	uc.misses.end(r.VoucherID, nil, now)
	if !whole {
		return fmt.Errorf("voucher %s: %w: its sale state is being restored", r.VoucherID, domain.ErrUnavailable)
	}
	if err := uc.stock.Reserve(ctx, r); !errors.Is(err, domain.ErrNotFound) {
		return err
	}
	return fmt.Errorf("voucher %s: %w: its sale state is missing", r.VoucherID, domain.ErrUnavailable)
}

// missFlights remembers, per voucher, a rebuild in progress and, for a second, the
// answer of the last one that found nothing to rebuild, so a flood of grabs of a
// voucher without sale state asks the database once, not once per grab.
type missFlights struct {
	mu      sync.Mutex
	flights map[domain.VoucherID]missFlight
}

type missFlight struct {
	busy   bool
	answer error     // domain.ErrNotFound or domain.ErrEnded; nil: none remembered
	at     time.Time // when answer was found
}

// missMemory is how long a not_found or ended answer stands for later grabs.
const missMemory = time.Second

// missFlightsMax bounds the answers remembered; past it they are forgotten at once.
const missFlightsMax = 10_000

func newMissFlights() *missFlights {
	return &missFlights{flights: make(map[domain.VoucherID]missFlight)}
}

// begin reports whether this grab is the one to rebuild voucher id; when it is not,
// answer is what to answer instead: a remembered not_found or ended, or unavailable
// while another grab rebuilds.
func (m *missFlights) begin(id domain.VoucherID, now time.Time) (answer error, first bool) { //nolint:revive // answer is a value for the client, not this call's failure
	m.mu.Lock()
	defer m.mu.Unlock()
	f := m.flights[id]
	switch {
	case f.busy:
		return fmt.Errorf("voucher %s: %w: its sale state is being rebuilt", id, domain.ErrUnavailable), false
	case f.answer != nil && now.Sub(f.at) < missMemory:
		return f.answer, false
	}
	if len(m.flights) >= missFlightsMax {
		clear(m.flights)
	}
	m.flights[id] = missFlight{busy: true}
	return nil, true
}

// end records the rebuild's answer to remember (nil: none).
func (m *missFlights) end(id domain.VoucherID, answer error, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if answer == nil {
		delete(m.flights, id)
		return
	}
	m.flights[id] = missFlight{answer: answer, at: now}
}
