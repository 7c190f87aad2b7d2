package application

import (
	"context"
	"fmt"
	"time"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// Door is the way a buyer comes to a voucher. BuyerGate judges each by its own rules;
// the use case behind it does the rest.
type Door int

// The doors of a voucher.
const (
	// DoorGrab is a grab (GrabVoucher): the hot path. The gate reads no voucher (the
	// stock judges the sale, its window and its gates: domain.Sale.Judge); it checks
	// the pass and the proof the grab carries, so the stock judges with what they
	// proved.
	DoorGrab Door = iota + 1
	// DoorQueue is a waiting room's join (JoinQueue): a voucher sold with one, from its
	// queue_opens_at until it ends, with a proof when it asks for one.
	DoorQueue
	// DoorDraw is a draw's entry (EnterDraw): a draw voucher, with a proof when it asks
	// for one (its entries' window is judged by the store).
	DoorDraw
	// DoorWaitlist is a waitlist's join (JoinWaitlist): a first-come voucher (whether
	// it is sold out is judged by the store).
	DoorWaitlist
)

// BuyerCommand is one buyer at one of a voucher's doors, as BuyerGate checks it.
type BuyerCommand struct {
	Door      Door
	VoucherID domain.VoucherID
	UserID    domain.UserID
	// Quantity is the units a grab asks for (1 to domain.MaxQuantity); the other
	// doors take none.
	Quantity int
	// Pass is the waiting room's pass a grab carries, as the client sent it (a token
	// of domain.SignPass); "" for none.
	Pass string
	// Proof is the solved challenge the request carries, as the client sent it (for a
	// proof of work "<challenge>:<nonce>"); "" for none.
	Proof string
}

// Buyer is a buyer the gate let through, with what it found out on the way.
type Buyer struct {
	// Voucher is the voucher as the gate read it; zero at DoorGrab, where none is read.
	Voucher domain.Voucher
	// Now is when the gate judged the buyer, by the sale's clock.
	Now time.Time
	// PassExpires is when the grab's pass, verified, expires; zero without one.
	PassExpires time.Time
	// Proven says that the request carried a proof, verified and now spent.
	Proven bool
}

// ProofVerifier checks a solved challenge (VerifyProof is the one the service uses):
// Handle returns nil when the command's proof is a valid, unspent solution of a
// challenge issued to its user for its voucher, and spends it; else
// domain.ErrChallengeRequired (or an error wrapping domain.ErrUnavailable when it
// could not tell).
type ProofVerifier interface {
	Handle(ctx context.Context, cmd VerifyProofCmd) error
}

// GateOptions tune the BuyerGate.
type GateOptions struct {
	// Denied, when set, is this instance's copy of the deny list: a listed user is
	// refused at every door before any store is asked.
	Denied *DeniedUsers
	// PassKey signs the waiting room's passes; a grab's pass is verified with it.
	PassKey PassKey
	// Rooms reads the sales of the waiting rooms' joins, campaigns' rooms included;
	// nil reads vouchers' own rooms only.
	Rooms *RoomSales
	// Proofs, when set, verifies (and spends) the proofs requests carry. Without it
	// nothing is ever proven, and a voucher that asks for a challenge refuses every
	// grab, join and entry.
	Proofs ProofVerifier
	// SoldOutTTL is how long a grab of a voucher known sold out is refused at the
	// gate without asking the stock, once the stock said it has no unit left
	// (SoldOut); 0 always asks.
	SoldOutTTL time.Duration
}

// BuyerGate is the one check of a buyer at every door of a voucher — a grab, a
// waiting room's join, a draw's entry, a waitlist's join — before the use case behind
// the door acts. It checks, in this order, and answers the first refusal:
//
//  1. the command: a *domain.ValidationError for ids below 1 (and, at DoorGrab, a
//     quantity out of 1..domain.MaxQuantity);
//  2. the user: domain.ErrDenied for a user on the deny list;
//  3. the voucher, read at every door but the grab's (at DoorQueue and DoorDraw the
//     room's sale: a voucher's, or a campaign's by its room id, RoomSales): its error
//     (domain.ErrNotFound), then the door's admission (domain.ErrNoWaitingRoom — for
//     a campaign's voucher too, whose room is its campaign's —, domain.ErrNotDraw —
//     for a campaign's voucher too, drawn in its campaign's draw —, an error
//     wrapping domain.ErrWaitlistUnsupported) and window (the queue's: ErrNotStarted
//     before queue_opens_at, ErrEnded from ends_at);
//  4. the grab's pass, by its signature alone (domain.VerifyPass's refusals), for
//     the room that admits to the voucher (domain.VoucherID.Room);
//  5. what this instance knows without asking: a grab of a voucher the stock said is
//     sold out is answered domain.ErrSoldOut (see SoldOut);
//  6. the proof, last because it asks a store and spends it: at DoorGrab a proof
//     carried is verified (the stock refuses an unproven grab of a voucher that asks
//     for one); at DoorQueue and DoorDraw, a voucher that asks for a challenge takes
//     only a valid proof (domain.ErrChallengeRequired, or an error wrapping
//     domain.ErrUnavailable).
//
// What costs nothing comes first, what asks a store last. A new rule of who may buy
// (a campaign's, a presale's) is one more step here, at its place in the order.
type BuyerGate struct {
	vouchers ports.Vouchers
	// rooms reads the sales of the waiting rooms' joins, which every user of a queue
	// makes at once, through a cache (roomVoucherAge).
	rooms   *RoomSales
	clock   ports.Clock
	denied  *DeniedUsers
	passKey PassKey
	proofs  ProofVerifier
	soldOut *soldOutFlags
}

// NewBuyerGate returns the gate: vouchers are read from vouchers, judged by clock (the
// sale's).
func NewBuyerGate(vouchers ports.Vouchers, clock ports.Clock, opts GateOptions) *BuyerGate {
	rooms := opts.Rooms
	if rooms == nil {
		rooms = NewRoomSales(vouchers, nil)
	}
	return &BuyerGate{vouchers: vouchers, rooms: rooms, clock: clock, denied: opts.Denied,
		passKey: opts.PassKey, proofs: opts.Proofs, soldOut: newSoldOutFlags(opts.SoldOutTTL)}
}

// Check judges cmd (see BuyerGate) and returns the buyer it lets through, or the
// first refusal.
func (g *BuyerGate) Check(ctx context.Context, cmd BuyerCommand) (Buyer, error) {
	if err := cmd.valid(); err != nil {
		return Buyer{}, err
	}
	if g.denied != nil && g.denied.Denied(cmd.UserID) {
		return Buyer{}, domain.ErrDenied
	}
	var b Buyer
	if cmd.Door != DoorGrab {
		v, err := g.voucher(ctx, cmd)
		if err != nil {
			return Buyer{}, err
		}
		b.Voucher = v
	}
	b.Now = g.clock.Now()
	if err := admits(cmd.Door, b.Voucher, b.Now); err != nil {
		return Buyer{}, err
	}
	if cmd.Pass != "" {
		// A campaign's voucher is let in by its campaign's room: the pass names that.
		p, err := domain.VerifyPass(g.passKey, cmd.Pass, cmd.VoucherID.Room(), cmd.UserID, b.Now)
		if err != nil {
			return Buyer{}, err
		}
		b.PassExpires = p.Expires
	}
	if cmd.Door == DoorGrab && g.soldOut.isSet(cmd.VoucherID, b.Now) {
		return Buyer{}, domain.ErrSoldOut
	}
	proven, err := g.prove(ctx, cmd, b.Voucher)
	if err != nil {
		return Buyer{}, err
	}
	b.Proven = proven
	return b, nil
}

// SoldOut tells the gate that the stock refused a grab of voucher id at now for want
// of units: the gate answers its grabs sold out for GateOptions.SoldOutTTL. Only a
// one-unit grab that carried no pass and no proof proves it (see GrabVoucher).
func (g *BuyerGate) SoldOut(id domain.VoucherID, now time.Time) { g.soldOut.set(id, now) }

// Restocked tells the gate that units of voucher id came back on sale, so its grabs
// reach the stock again at once.
func (g *BuyerGate) Restocked(id domain.VoucherID) { g.soldOut.clear(id) }

// valid returns a *domain.ValidationError for a command that cannot name a voucher, a
// user, or (at DoorGrab) a quantity.
func (cmd BuyerCommand) valid() error {
	switch {
	case cmd.VoucherID <= 0:
		return domain.Invalid("id", "must be a positive integer")
	case cmd.UserID <= 0:
		return domain.Invalid("user", "must be a positive integer")
	case cmd.Door == DoorGrab && (cmd.Quantity < 1 || cmd.Quantity > domain.MaxQuantity):
		return domain.Invalid("quantity", "must be between 1 and the per-user limit")
	}
	return nil
}

// voucher reads the voucher of cmd: through the rooms' cache at DoorQueue and
// DoorDraw, whose users come all at once before a sale (a campaign's room or draw by
// its room id), from the store at the others (a waitlist's join judges by its latest
// terms).
func (g *BuyerGate) voucher(ctx context.Context, cmd BuyerCommand) (domain.Voucher, error) {
	if cmd.Door == DoorQueue || cmd.Door == DoorDraw {
		return g.rooms.Cached(ctx, cmd.VoucherID)
	}
	return g.vouchers.Get(ctx, cmd.VoucherID)
}

// admits returns the refusal of door for voucher v at now, nil when v admits at it.
func admits(door Door, v domain.Voucher, now time.Time) error {
	switch door {
	case DoorQueue:
		switch {
		case !v.OwnRoom():
			return domain.ErrNoWaitingRoom
		case now.Before(v.QueueOpensAt):
			return domain.ErrNotStarted
		case !now.Before(v.EndsAt):
			return domain.ErrEnded
		}
	case DoorDraw:
		// A campaign's voucher is drawn in its campaign's draw, entered there.
		if v.Admission != domain.AdmissionDraw || v.ID.Room() != v.ID {
			return domain.ErrNotDraw
		}
	case DoorWaitlist:
		if v.Admission != "" && v.Admission != domain.AdmissionFirstCome {
			return fmt.Errorf("voucher %s admits by %s: %w", v.ID, v.Admission, domain.ErrWaitlistUnsupported)
		}
	case DoorGrab:
		// The stock judges the grab's voucher.
	}
	return nil
}

// prove checks the proof cmd carries as its door asks, and reports whether one was
// verified (and spent).
func (g *BuyerGate) prove(ctx context.Context, cmd BuyerCommand, v domain.Voucher) (bool, error) {
	switch cmd.Door {
	case DoorGrab:
		if cmd.Proof == "" || g.proofs == nil {
			return false, nil // the stock refuses the grab if its sale asks for a proof
		}
	case DoorQueue, DoorDraw:
		if v.Challenge != domain.ChallengePow {
			return false, nil
		}
		if cmd.Proof == "" || g.proofs == nil {
			return false, domain.ErrChallengeRequired
		}
	case DoorWaitlist:
		return false, nil
	}
	if err := g.proofs.Handle(ctx, VerifyProofCmd{VoucherID: cmd.VoucherID, UserID: cmd.UserID, Proof: cmd.Proof}); err != nil {
		return false, err
	}
	return true, nil
}
