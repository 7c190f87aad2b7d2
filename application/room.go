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

// roomVoucherAge is how long the waiting room's reads keep a room's sale read from
// the store: joins and places, which every user in a queue makes (and its event
// stream every 500 ms), read the database about once a second per room and instance.
const roomVoucherAge = time.Second

// RoomSales reads the sale a waiting room admits to, by the room's id: a voucher sold
// through a room of its own, by the voucher's id, or a campaign's whole drop, by the
// campaign's room id (domain.CampaignID.Room), as domain.Campaign.Room presents it. The
// waiting room's use cases read it through a cache of roomVoucherAge (Cached).
type RoomSales struct {
	vouchers ports.Vouchers
	// campaigns is nil where there are none: a campaign's room id is then not found.
	campaigns ports.Campaigns
	cache     sync.Map // domain.VoucherID -> cachedVoucher
	// database says the sales' state is the database's rows (WithDatabaseStock);
	// sales caches what Sale read (domain.VoucherID -> cachedSale).
	database bool
	sales    sync.Map
}

// cachedSale is a room's sale as Sale read it, and when.
type cachedSale struct {
	s  ports.RoomSale
	at time.Time
}

// WithDatabaseStock makes r tell the waiting rooms each sale as the database holds it
// (Sale): for the postgres stock strategy, which keeps no sale state beside the
// rooms in Redis. It returns r.
func (r *RoomSales) WithDatabaseStock() *RoomSales {
	r.database = true
	return r
}

// Sale returns the sale room admits to as the database holds it at now, read at most
// roomVoucherAge ago: open while it is on and some voucher of it is not paused, with
// its units on sale (a campaign's: those of its vouchers not paused, at most what its
// cap leaves). It returns nil, nil without WithDatabaseStock: the room's store judges
// the sale itself.
func (r *RoomSales) Sale(ctx context.Context, room domain.Voucher, now time.Time) (*ports.RoomSale, error) {
	if !r.database {
		return nil, nil //nolint:nilnil // the store judges: no figures to give
	}
	if c, ok := r.sales.Load(room.ID); ok {
		if c := c.(cachedSale); time.Since(c.at) < roomVoucherAge { //nolint:forcetypeassert // only cachedSales are stored
			return r.judged(c.s, room, now), nil
		}
	}
	vs := []domain.Voucher{room}
	capLeft := -1
	if c, ok := room.ID.CampaignRoom(); ok {
		camp, err := r.campaigns.Get(ctx, c)
		if err != nil {
			return nil, err
		}
		if vs, err = r.vouchers.List(ctx, ports.VoucherQuery{Campaign: c, Limit: domain.MaxVariants}); err != nil {
			return nil, err
		}
		if camp.Cap != nil {
			capLeft = max(*camp.Cap-camp.Sold, 0)
		}
	} else {
		v, err := r.vouchers.Get(ctx, room.ID)
		if err != nil {
			return nil, err
		}
		vs[0] = v
	}
	var s ports.RoomSale
	for _, v := range vs {
		if !v.Paused {
			s.Open = true
			s.OnSale += max(v.Stock-v.Sold, 0)
		}
	}
	if capLeft >= 0 {
		s.OnSale = min(s.OnSale, capLeft)
	}
	r.sales.Store(room.ID, cachedSale{s: s, at: time.Now()})
	return r.judged(s, room, now), nil
}

// judged returns s, open only within room's window at now.
func (r *RoomSales) judged(s ports.RoomSale, room domain.Voucher, now time.Time) *ports.RoomSale {
	s.Open = s.Open && !now.Before(room.BeginsAt) && now.Before(room.EndsAt)
	return &s
}

// NewRoomSales returns the reader; campaigns may be nil.
func NewRoomSales(vouchers ports.Vouchers, campaigns ports.Campaigns) *RoomSales {
	return &RoomSales{vouchers: vouchers, campaigns: campaigns}
}

// cachedVoucher is a room's sale and when it was read (the host's monotonic clock).
type cachedVoucher struct {
	v  domain.Voucher
	at time.Time
}

// Get reads the sale of room id as it is now: the voucher id, or the room of the
// campaign whose room id it is. It returns domain.ErrNotFound when there is none.
func (r *RoomSales) Get(ctx context.Context, id domain.VoucherID) (domain.Voucher, error) {
	if c, ok := id.CampaignRoom(); ok {
		if r.campaigns == nil {
			return domain.Voucher{}, domain.ErrNotFound
		}
		camp, err := r.campaigns.Get(ctx, c)
		if err != nil {
			return domain.Voucher{}, err
		}
		return camp.Room(), nil
	}
	return r.vouchers.Get(ctx, id)
}

// Drop reads campaign c and its vouchers as they are now (a drop's draw is walked
// against them): domain.ErrNotFound for an unknown campaign, or where there are no
// campaigns.
func (r *RoomSales) Drop(ctx context.Context, c domain.CampaignID) (domain.Campaign, []domain.Voucher, error) {
	if r.campaigns == nil {
		return domain.Campaign{}, nil, domain.ErrNotFound
	}
	camp, err := r.campaigns.Get(ctx, c)
	if err != nil {
		return domain.Campaign{}, nil, err
	}
	vs, err := r.vouchers.List(ctx, ports.VoucherQuery{Campaign: c, Limit: domain.MaxVariants})
	if err != nil {
		return domain.Campaign{}, nil, err
	}
	return camp, vs, nil
}

// Cached returns the sale of room id as read at most roomVoucherAge ago.
func (r *RoomSales) Cached(ctx context.Context, id domain.VoucherID) (domain.Voucher, error) {
	if c, ok := r.cache.Load(id); ok {
		if c := c.(cachedVoucher); time.Since(c.at) < roomVoucherAge { //nolint:forcetypeassert // only cachedVouchers are stored
			return c.v, nil
		}
	}
	v, err := r.Get(ctx, id)
	if err != nil {
		return domain.Voucher{}, err
	}
	r.cache.Store(id, cachedVoucher{v: v, at: time.Now()})
	return v, nil
}

// Active returns the rooms of the sales active at now (ports.Vouchers.Active): each
// voucher sold through a room of its own, and the room of each campaign one of whose
// vouchers is active and admits through a waiting room.
func (r *RoomSales) Active(ctx context.Context, now time.Time) ([]domain.Voucher, error) {
	active, err := r.vouchers.Active(ctx, now)
	if err != nil {
		return nil, err
	}
	var rooms []domain.Voucher
	seen := map[domain.CampaignID]bool{}
	for _, v := range active {
		switch {
		case v.Admission != domain.AdmissionWaitingRoom:
		case v.CampaignID == 0:
			rooms = append(rooms, v)
		case !seen[v.CampaignID]:
			seen[v.CampaignID] = true
			room, err := r.Get(ctx, v.CampaignID.Room())
			if err != nil {
				return nil, fmt.Errorf("campaign %s: %w", v.CampaignID, err)
			}
			rooms = append(rooms, room)
		}
	}
	return rooms, nil
}

// JoinQueue puts a user in a voucher's waiting room.
type JoinQueue struct {
	room   ports.WaitingRoom
	gate   *BuyerGate
	joined func(early bool)
}

// NewJoinQueue returns the use case: the rooms it writes, and the gate that checks
// each joiner (DoorQueue).
func NewJoinQueue(room ports.WaitingRoom, gate *BuyerGate) *JoinQueue {
	return &JoinQueue{room: room, gate: gate, joined: func(bool) {}}
}

// Observe calls fn with each join that put a user in a room (early: before the
// start). It must be called before Handle is.
func (uc *JoinQueue) Observe(fn func(early bool)) { uc.joined = fn }

// JoinQueueCmd is one user's join of a voucher's waiting room.
type JoinQueueCmd struct {
	VoucherID domain.VoucherID
	UserID    domain.UserID
	// Proof is the client's solution of the voucher's challenge; "" for none.
	Proof string
}

// Handle puts the user in the voucher's waiting room; joining again keeps the place
// there is. The gate refuses first (BuyerGate, DoorQueue): a *domain.ValidationError,
// domain.ErrDenied for a listed user, domain.ErrNotFound, domain.ErrNoWaitingRoom for
// a voucher sold otherwise, domain.ErrNotStarted before its queue_opens_at,
// domain.ErrEnded once its sale ended, and, for a voucher that asks for a challenge,
// domain.ErrChallengeRequired unless the proof is a valid one of the user's, which it
// spends.
func (uc *JoinQueue) Handle(ctx context.Context, cmd JoinQueueCmd) error {
	b, err := uc.gate.Check(ctx, BuyerCommand{Door: DoorQueue, VoucherID: cmd.VoucherID, UserID: cmd.UserID, Proof: cmd.Proof})
	if err != nil {
		return err
	}
	early, err := uc.room.Join(ctx, b.Voucher, cmd.UserID)
	if err != nil {
		return err
	}
	uc.joined(early)
	return nil
}

// QueueView is what a user reads of its place in a waiting room.
type QueueView struct {
	// Position counts from 1 and never changes; 0 while it is not known yet (before
	// the shuffle). Ahead is how many are still to be let in before the user.
	Position, Ahead int64
	Admitted        bool
	SoldOut         bool
	// Pass is the signed pass of an admitted user (domain.SignPass) while it is
	// outstanding, and PassExpires when it expires; "" and zero otherwise.
	Pass        string
	PassExpires time.Time
	// Commitment is the hex SHA-256 of the voucher's seed.
	Commitment string
	// Shuffle is the published shuffle (seed, entrants' count and digest, no
	// entrants), once it ran; nil before.
	Shuffle *domain.SeededShuffle
	// Wait is the estimated wait until the user is let in, from the measured
	// admission rate; WaitKnown is false while it cannot be told (no rate yet,
	// position unknown, admitted, sold out).
	Wait      time.Duration
	WaitKnown bool
}

// QueueStatus reads a user's place in a voucher's (or a campaign's) waiting room.
type QueueStatus struct {
	vouchers *RoomSales
	room     ports.WaitingRoom
	shuffles ports.Shuffles
	clock    ports.Clock
	key      PassKey
	// published caches the shuffles read: a shuffle never changes once saved.
	published sync.Map // domain.VoucherID -> domain.SeededShuffle
}

// NewQueueStatus returns the use case; key signs the passes.
func NewQueueStatus(rooms *RoomSales, room ports.WaitingRoom, shuffles ports.Shuffles, clock ports.Clock, key PassKey) *QueueStatus {
	return &QueueStatus{vouchers: rooms, room: room, shuffles: shuffles, clock: clock, key: key}
}

// Handle returns user's place in voucher id's waiting room, or domain.ErrNotFound
// (no such voucher), domain.ErrNotJoined (the user never joined; a
// domain.ErrNotFound too), or domain.ErrNoWaitingRoom.
func (uc *QueueStatus) Handle(ctx context.Context, id domain.VoucherID, user domain.UserID) (QueueView, error) {
	v, err := uc.vouchers.Cached(ctx, id)
	if err != nil {
		return QueueView{}, err
	}
	if !v.OwnRoom() {
		return QueueView{}, domain.ErrNoWaitingRoom
	}
	p, err := uc.room.Place(ctx, id, user)
	if errors.Is(err, domain.ErrNotFound) {
		return QueueView{}, domain.ErrNotJoined
	}
	if err != nil {
		return QueueView{}, err
	}
	view := QueueView{Position: p.Position, SoldOut: p.SoldOut, Commitment: v.Commitment()}
	if sale, err := uc.vouchers.Sale(ctx, v, uc.clock.Now()); err != nil {
		return QueueView{}, err
	} else if sale != nil {
		view.SoldOut = sale.Open && sale.OnSale == 0
	}
	if p.Position > 0 {
		view.Admitted = p.Position <= p.Admitted
		if !view.Admitted {
			view.Ahead = p.Position - p.Admitted - 1
			if p.Rate > 0 && !p.SoldOut {
				view.Wait = time.Duration(float64(view.Ahead+1) / p.Rate * float64(time.Second)).Round(time.Second)
				view.WaitKnown = true
			}
		}
	}
	if !p.PassExpires.IsZero() {
		view.PassExpires = p.PassExpires
		view.Pass = domain.SignPass(uc.key, domain.Pass{Voucher: id, User: user, Expires: p.PassExpires})
	}
	if !uc.clock.Now().Before(v.BeginsAt) {
		sh, err := uc.shuffle(ctx, id)
		if err != nil {
			return QueueView{}, err
		}
		view.Shuffle = sh
	}
	return view, nil
}

// shuffle returns voucher id's published shuffle, without its entrants, or nil
// before it ran.
func (uc *QueueStatus) shuffle(ctx context.Context, id domain.VoucherID) (*domain.SeededShuffle, error) {
	if sh, ok := uc.published.Load(id); ok {
		s := sh.(domain.SeededShuffle) //nolint:forcetypeassert // only Shuffles are stored
		return &s, nil
	}
	sh, err := publishedShuffle(ctx, uc.shuffles, id)
	if sh != nil {
		uc.published.Store(id, *sh)
	}
	return sh, err
}

// QueueEntrants reads the entrants of a waiting room's shuffle: with the seed and the
// digest QueueStatus publishes, anyone recomputes the shuffle and checks it.
type QueueEntrants struct {
	vouchers *RoomSales
	shuffles ports.Shuffles
}

// NewQueueEntrants returns the use case.
func NewQueueEntrants(rooms *RoomSales, shuffles ports.Shuffles) *QueueEntrants {
	return &QueueEntrants{vouchers: rooms, shuffles: shuffles}
}

// Handle returns voucher id's shuffle with its entrants, ascending
// (domain.SortEntrants). It returns domain.ErrNotFound for a voucher that does not
// exist and before the shuffle ran, domain.ErrNoWaitingRoom for a voucher sold
// otherwise.
func (uc *QueueEntrants) Handle(ctx context.Context, id domain.VoucherID) (domain.SeededShuffle, error) {
	v, err := uc.vouchers.Cached(ctx, id)
	if err != nil {
		return domain.SeededShuffle{}, err
	}
	if !v.OwnRoom() {
		return domain.SeededShuffle{}, domain.ErrNoWaitingRoom
	}
	return uc.shuffles.Get(ctx, id, true)
}

// RoomOptions tune AdmitQueues.
type RoomOptions struct {
	// Holder names this instance in the shuffle's lease (required).
	Holder string
	// LeaseTTL is how long the instance that shuffles holds the voucher's lease: an
	// instance that dies in the middle is taken over after it; DefaultRoomLease when
	// 0.
	LeaseTTL time.Duration
	// ListEvery is how often the list of waiting-room vouchers is read again;
	// DefaultRoomList when 0.
	ListEvery time.Duration
}

// The defaults of RoomOptions.
const (
	DefaultRoomLease = 15 * time.Second
	DefaultRoomList  = 2 * time.Second
)

// RoomObserver hears what AdmitQueues does; nil fields hear nothing.
type RoomObserver struct {
	// Admitted hears each admission step that let users in.
	Admitted func(v domain.VoucherID, a ports.Admission)
	// Outstanding hears, after each Handle, the passes outstanding in every room it
	// stepped, summed.
	Outstanding func(n int)
	// Saved hears each shuffle saved in the database (or found saved), just before
	// its install.
	Saved func(v domain.VoucherID, entrants int)
	// Shuffled hears each shuffle installed: how many entrants, and how long the
	// shuffle took from reading the entrants to the install's end.
	Shuffled func(v domain.VoucherID, entrants int, took time.Duration)
}

// AdmitQueues runs the waiting rooms: at the start of each waiting-room sale one
// instance (the holder of the voucher's lease) shuffles the early joiners, saves the
// shuffle in the database and installs it in the room; then every instance that runs
// it lets users in, each step atomic in the store, so several may run at once.
type AdmitQueues struct {
	vouchers *RoomSales
	room     ports.WaitingRoom
	shuffles ports.Shuffles
	leases   ports.Leases
	clock    ports.Clock
	opts     RoomOptions
	obs      RoomObserver

	list     []domain.Voucher
	listedAt time.Time
}

// NewAdmitQueues returns the use case.
func NewAdmitQueues(rooms *RoomSales, room ports.WaitingRoom, shuffles ports.Shuffles, leases ports.Leases,
	clock ports.Clock, opts RoomOptions, obs RoomObserver) *AdmitQueues {
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = DefaultRoomLease
	}
	if opts.ListEvery <= 0 {
		opts.ListEvery = DefaultRoomList
	}
	return &AdmitQueues{vouchers: rooms, room: room, shuffles: shuffles, leases: leases, clock: clock, opts: opts, obs: obs}
}

// Handle runs one step of every waiting room whose sale is on: the shuffle of a room
// not yet installed (by the lease's holder), then an admission step. It is not safe
// for concurrent use (one loop calls it). A room that fails does not stop the others;
// the errors are joined.
func (uc *AdmitQueues) Handle(ctx context.Context) error {
	now := uc.clock.Now()
	if uc.list == nil || now.Sub(uc.listedAt) >= uc.opts.ListEvery || now.Before(uc.listedAt) {
		active, err := uc.vouchers.Active(ctx, now)
		if err != nil {
			return fmt.Errorf("waiting rooms: %w", err)
		}
		uc.list, uc.listedAt = active, now
	}
	var errs []error
	outstanding := 0
	for _, v := range uc.list {
		if now.Before(v.BeginsAt) || !now.Before(v.EndsAt) {
			continue
		}
		n, err := uc.step(ctx, v)
		if err != nil {
			errs = append(errs, fmt.Errorf("waiting room of voucher %s: %w", v.ID, err))
		}
		outstanding += n
	}
	if uc.obs.Outstanding != nil {
		uc.obs.Outstanding(outstanding)
	}
	return errors.Join(errs...)
}

// step shuffles v's room if it is not installed yet, and admits; it returns the
// passes outstanding after.
func (uc *AdmitQueues) step(ctx context.Context, v domain.Voucher) (int, error) {
	installed, err := uc.room.Installed(ctx, v.ID)
	if err != nil {
		return 0, err
	}
	if !installed {
		// The list may be a moment old: the shuffle judges by the voucher as it is
		// now (an edit may have moved its start).
		if v, err = uc.vouchers.Get(ctx, v.ID); err != nil {
			return 0, err
		}
		if uc.clock.Now().Before(v.BeginsAt) {
			return 0, nil
		}
		if installed, err = uc.Shuffle(ctx, v); err != nil || !installed {
			return 0, err
		}
	}
	sale, err := uc.vouchers.Sale(ctx, v, uc.clock.Now())
	if err != nil {
		return 0, err
	}
	a, err := uc.room.Admit(ctx, v, v.QueueWindow, domain.PassLifetime, sale)
	if err != nil {
		return 0, err
	}
	if len(a.Users) > 0 && uc.obs.Admitted != nil {
		uc.obs.Admitted(v.ID, a)
	}
	return max(a.Outstanding, 0), nil
}

// roomLease names the lease of voucher id's shuffle.
func roomLease(id domain.VoucherID) string { return "shuffle:" + id.String() }

// Shuffle runs v's shuffle if this instance takes the voucher's lease: the saved
// shuffle when there is one (a Redis that restarted, an instance that died before
// the install), else the early joiners, closed to new ones, sorted and saved with the
// seed before the order domain.Shuffle makes of them is installed. It reports
// whether the order is installed; false, with no error, while another instance holds
// the lease or the sale's clock has not reached the start.
func (uc *AdmitQueues) Shuffle(ctx context.Context, v domain.Voucher) (bool, error) {
	_, ok, err := uc.leases.Acquire(ctx, roomLease(v.ID), uc.opts.Holder, uc.opts.LeaseTTL)
	if err != nil || !ok {
		return false, err
	}
	defer func() {
		// The lease is let go at once, whatever became of the request's context.
		_ = uc.leases.Release(context.WithoutCancel(ctx), roomLease(v.ID), uc.opts.Holder)
	}()
	start := time.Now()
	sh, err := uc.shuffles.Get(ctx, v.ID, true)
	if errors.Is(err, domain.ErrNotFound) {
		early, closed, cerr := uc.room.Close(ctx, v)
		if cerr != nil || !closed {
			return false, cerr
		}
		sh, err = uc.shuffles.Save(ctx, domain.NewSeededShuffle(v.ID, v.Seed, early, uc.clock.Now()))
	}
	if err != nil {
		return false, err
	}
	if uc.obs.Saved != nil {
		uc.obs.Saved(v.ID, len(sh.Entrants))
	}
	if err := uc.room.Install(ctx, v, sh.Order()); err != nil {
		return false, err
	}
	if uc.obs.Shuffled != nil {
		uc.obs.Shuffled(v.ID, len(sh.Entrants), time.Since(start))
	}
	return true, nil
}
