package domain

import (
	"strconv"
	"time"
)

// CampaignID identifies a campaign: a drop of several vouchers (its variants) sold
// together, under one window, one cap on the units sold across them and one limit
// per user across them. Valid ids are positive.
type CampaignID int64

// String returns the id in decimal, as the API and the Redis keys spell it.
func (id CampaignID) String() string { return strconv.FormatInt(int64(id), 10) }

// ParseCampaignID reads a decimal, positive campaign id. It returns a
// *ValidationError for anything else.
func ParseCampaignID(s string) (CampaignID, error) {
	n, err := parsePositive(s)
	if err != nil || n > maxCampaignID {
		return 0, Invalid("id", "must be a positive integer")
	}
	return CampaignID(n), nil
}

// A campaign's variants take their ids from a block of voucher ids of their own,
// above every id a voucher outside a campaign gets (the databases' sequences start
// at 1 and never come near 2^40): variant k (1..MaxVariants) of campaign c is
// variantBase + c·variantBlock + k. So every store tells a variant's campaign from
// its id alone — the Redis keys' hash tag (one slot per campaign), the database's
// checks — without a lookup, and the ids stay exact in a JSON number (below 2^53).
const (
	variantBase  = int64(1) << 40
	variantBlock = int64(1) << 10
	// MaxVariants is the most vouchers one campaign holds.
	MaxVariants = 1000
	// maxCampaignID keeps every variant id below 2^53.
	maxCampaignID = ((int64(1) << 53) - variantBase) / variantBlock
)

// Variant returns the id of the campaign's k-th voucher (1..MaxVariants).
func (id CampaignID) Variant(k int) VoucherID {
	return VoucherID(variantBase + int64(id)*variantBlock + int64(k))
}

// Room returns the id a campaign's waiting room goes by: the number 0 of its block,
// which no voucher takes. The room, its passes and its published shuffle are kept
// under it as a voucher's are under the voucher's id, on the campaign's Redis slot.
func (id CampaignID) Room() VoucherID { return id.Variant(0) }

// Room returns the id of the waiting room that admits to voucher id: its campaign's
// (CampaignID.Room) for a campaign's voucher, its own otherwise. A pass names it.
func (id VoucherID) Room() VoucherID {
	if c, _ := id.Campaign(); c != 0 {
		return c.Room()
	}
	return id
}

// CampaignRoom returns the campaign whose room id id is (CampaignID.Room), and true;
// 0 and false for any other id.
func (id VoucherID) CampaignRoom() (CampaignID, bool) {
	c, k := id.Campaign()
	return c, c != 0 && k == 0
}

// Campaign returns the campaign v belongs to and its number in it (1..MaxVariants),
// or 0, 0 for a voucher outside any campaign (and the campaign, 0, for a campaign's
// room id).
func (id VoucherID) Campaign() (CampaignID, int) {
	n := int64(id) - variantBase
	if n <= 0 {
		return 0, 0
	}
	return CampaignID(n / variantBlock), int(n % variantBlock)
}

// Campaign is a drop: vouchers sold together (its variants: sizes, tiers,
// denominations), each with its own stock, under the campaign's window, admission and
// challenge, with at most Cap units sold across them (none when Cap is nil) and at
// most PerUserLimit units to one user across them.
type Campaign struct {
	ID       CampaignID
	Title    string
	BeginsAt time.Time
	EndsAt   time.Time
	// PerUserLimit is the most units one user holds across the campaign's vouchers.
	PerUserLimit int
	// Cap, when set, is the most units sold across the campaign's vouchers, whatever
	// their stocks.
	Cap *int
	// Sold is the database's count of units held by live orders of its vouchers.
	Sold int
	// Variants is how many vouchers the campaign holds: ids Variant(1..Variants).
	Variants  int
	Admission Admission
	Challenge ChallengeKind
	// PowDifficulty is the proof of work's difficulty in bits, with ChallengePow.
	PowDifficulty int
	// QueueOpensAt and QueueWindow are the waiting room's, with
	// AdmissionWaitingRoom: one room for the whole drop (Room).
	QueueOpensAt time.Time
	QueueWindow  int
	// EntriesOpenAt is when the draw starts taking entries, with AdmissionDraw: one
	// draw for the whole drop (DropDraw), each entry naming the voucher chosen.
	EntriesOpenAt time.Time
	// Seed is the secret of the waiting room's or the draw's shuffle, drawn when the
	// campaign is created (NoSeed for first come); only its commitment is shown until
	// the shuffle ran. Its vouchers carry it too.
	Seed Seed
	// Version counts the changes of the campaign's terms (cap, per-user limit,
	// window), as a voucher's does.
	Version   int64
	CreatedAt time.Time
}

// VoucherIDs returns the ids of the campaign's vouchers, in creation order.
func (c Campaign) VoucherIDs() []VoucherID {
	ids := make([]VoucherID, c.Variants)
	for k := range ids {
		ids[k] = c.ID.Variant(k + 1)
	}
	return ids
}

// ValidateNew checks the rules a campaign must meet to be created at now: those of
// Validate and a sale that has not ended yet.
func (c Campaign) ValidateNew(now time.Time) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if !c.EndsAt.After(now) {
		return Invalid("ends_at", "must be in the future")
	}
	if c.Admission == AdmissionDraw && !c.BeginsAt.After(now) {
		return Invalid("begins_at", "must be in the future for a draw (it is drawn then)")
	}
	return nil
}

// Validate checks the rules a campaign must meet before it is stored. It returns a
// *ValidationError naming the first field that breaks one. A campaign admits first
// come, through one waiting room or by one draw, as a voucher does.
func (c Campaign) Validate() error {
	if err := validateTitle(c.Title); err != nil {
		return err
	}
	switch {
	case c.BeginsAt.IsZero():
		return Invalid("begins_at", "is required")
	case c.EndsAt.IsZero():
		return Invalid("ends_at", "is required")
	case outOfRange(c.BeginsAt):
		return Invalid("begins_at", "must be between 1970 and 9999")
	case outOfRange(c.EndsAt):
		return Invalid("ends_at", "must be between 1970 and 9999")
	case !c.BeginsAt.Before(c.EndsAt):
		return Invalid("ends_at", "must be after begins_at")
	case c.PerUserLimit < 1:
		return Invalid("per_user_limit", "must be at least 1")
	case c.PerUserLimit > MaxStock:
		return Invalid("per_user_limit", "must be at most 10000000")
	case c.Cap != nil && *c.Cap < 1:
		return Invalid("cap", "must be at least 1")
	case c.Cap != nil && *c.Cap > MaxStock*MaxVariants:
		return Invalid("cap", "must be at most 10000000000")
	}
	// The room's admission rules are a voucher's, but for the per-user limit: a
	// campaign's spans its vouchers (a draw's winner may buy another of them first
	// come after the draw), each of which a draw holds to 1.
	room := c.Room()
	room.PerUserLimit = 1
	return room.validateAdmission()
}

// WithAdmissionDefaults returns c with the admission settings it leaves unset filled
// in as a voucher's are (Voucher.WithAdmissionDefaults), and the seed of a waiting
// room drawn.
func (c Campaign) WithAdmissionDefaults(now time.Time) Campaign {
	r := c.Room().WithAdmissionDefaults(now)
	c.Admission, c.Challenge, c.PowDifficulty = r.Admission, r.Challenge, r.PowDifficulty
	c.QueueOpensAt, c.QueueWindow, c.EntriesOpenAt = r.QueueOpensAt, r.QueueWindow, r.EntriesOpenAt
	if c.Admission.Shuffled() && c.Seed == NoSeed {
		c.Seed = NewSeed()
	}
	return c
}

// Room returns the campaign's waiting room as the rooms run it: a voucher that sells
// nothing itself, under the campaign's room id (CampaignID.Room), with the campaign's
// window, admission, challenge, queue settings and seed. Its pass admits to a grab of
// any of the campaign's vouchers.
func (c Campaign) Room() Voucher {
	return Voucher{
		ID: c.ID.Room(), CampaignID: c.ID, Title: c.Title, BeginsAt: c.BeginsAt, EndsAt: c.EndsAt,
		PerUserLimit: c.PerUserLimit, Admission: c.Admission, Challenge: c.Challenge, PowDifficulty: c.PowDifficulty,
		QueueOpensAt: c.QueueOpensAt, QueueWindow: c.QueueWindow, EntriesOpenAt: c.EntriesOpenAt, Seed: c.Seed,
		Version: c.Version, CreatedAt: c.CreatedAt,
	}
}

// Variant returns the voucher v as the campaign's next variant would be stored: the
// campaign's id, window, admission, challenge, queue settings and seed, the next
// variant's id, and, when
// v asks for none, the campaign's per-user limit (at most v's stock; 1 in a draw) as
// its own. It
// returns a *ValidationError when the campaign is full or v's per-user limit is above
// the campaign's.
func (c Campaign) Variant(v Voucher) (Voucher, error) {
	if c.Variants >= MaxVariants {
		return Voucher{}, Invalid("campaign_id", "the campaign holds 1000 vouchers already")
	}
	v.ID = c.ID.Variant(c.Variants + 1)
	v.CampaignID = c.ID
	v.BeginsAt, v.EndsAt = c.BeginsAt, c.EndsAt
	v.Admission, v.Challenge, v.PowDifficulty = c.Admission, c.Challenge, c.PowDifficulty
	v.QueueOpensAt, v.QueueWindow, v.Seed, v.EntriesOpenAt = c.QueueOpensAt, c.QueueWindow, c.Seed, c.EntriesOpenAt
	if v.PerUserLimit == 0 {
		v.PerUserLimit = min(c.PerUserLimit, v.Stock)
		if c.Admission == AdmissionDraw {
			v.PerUserLimit = 1 // one unit per winner, as any draw's
		}
	}
	if v.PerUserLimit > c.PerUserLimit {
		return Voucher{}, Invalid("per_user_limit", "must not exceed the campaign's per_user_limit")
	}
	return v, nil
}

// Remaining returns the units left of the campaign: those of its vouchers (left, by
// voucher), or, under a cap, the fewer of those and the cap's units not sold (cap
// minus the units its vouchers' stocks and remaining units say are taken).
func (c Campaign) Remaining(stocks, left map[VoucherID]int) int {
	sum, taken := 0, 0
	for _, id := range c.VoucherIDs() {
		sum += left[id]
		taken += stocks[id] - left[id]
	}
	if c.Cap == nil {
		return sum
	}
	return max(0, min(sum, *c.Cap-taken))
}

// State returns the campaign's sale state at now with remaining units left, as a
// voucher's (Voucher.State).
func (c Campaign) State(now time.Time, remaining int) SaleState {
	return Voucher{BeginsAt: c.BeginsAt, EndsAt: c.EndsAt}.State(now, remaining)
}

// CampaignSale is what a grab of a campaign's voucher is judged by beside the
// voucher's own sale (Sale.Campaign): the campaign's units left under its cap, its
// per-user limit, and what the grab's user holds of its other vouchers.
type CampaignSale struct {
	// Capped says the campaign has a cap; CapLeft is then its units not taken.
	Capped  bool
	CapLeft int
	// PerUserLimit is the most units one user holds across the campaign.
	PerUserLimit int
	// UserUnits and UserOrders are the units and the orders the grab's user holds of
	// the campaign's vouchers.
	UserUnits  int
	UserOrders []OrderID
}

// CampaignEdit is an admin's change of a campaign: each field that is not nil is a
// change, the rest stay as they are. Its vouchers follow its window.
type CampaignEdit struct {
	Cap          *int
	PerUserLimit *int
	Title        *string
	// EndsAt moves the end of the campaign's sale, to the past too (it ends at once).
	EndsAt *time.Time
}

// Apply returns c as e leaves it, with Version one more when its terms (cap,
// per-user limit, window) change. It returns a *ValidationError when e names no
// change or the campaign it leaves breaks a rule of Validate. Whether a lower cap
// still holds the units taken is the stores' to judge (domain.ErrNotEnoughUnits).
func (c Campaign) Apply(e CampaignEdit) (Campaign, error) {
	if e.Cap == nil && e.PerUserLimit == nil && e.Title == nil && e.EndsAt == nil {
		return Campaign{}, Invalid("body", "names no change: give at least one of cap, per_user_limit, title, ends_at")
	}
	out := c
	if e.Cap != nil {
		n := *e.Cap
		out.Cap = &n
	}
	if e.PerUserLimit != nil {
		out.PerUserLimit = *e.PerUserLimit
	}
	if e.Title != nil {
		out.Title = *e.Title
	}
	if e.EndsAt != nil {
		out.EndsAt = toMillis(*e.EndsAt).UTC()
	}
	if err := out.Validate(); err != nil {
		return Campaign{}, err
	}
	if !out.sameTerms(c) {
		out.Version = c.Version + 1
	}
	return out, nil
}

// sameTerms reports whether c and d sell on the same terms: cap, per-user limit and
// window.
func (c Campaign) sameTerms(d Campaign) bool {
	capped := (c.Cap == nil) == (d.Cap == nil) && (c.Cap == nil || *c.Cap == *d.Cap)
	return capped && c.PerUserLimit == d.PerUserLimit && c.BeginsAt.Equal(d.BeginsAt) && c.EndsAt.Equal(d.EndsAt)
}
