package application_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/memory"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// fakeRoom is a ports.WaitingRoom in memory: early joiners until Close, then the line.
type fakeRoom struct {
	mu        sync.Mutex
	clock     ports.Clock
	early     map[domain.UserID]bool
	late      []domain.UserID
	closed    bool
	order     []domain.UserID
	installed bool
	closes    int
	failInst  int // Install calls still to fail
	admitted  int
	passes    map[domain.UserID]time.Time
}

func newFakeRoom(clock ports.Clock) *fakeRoom {
	return &fakeRoom{clock: clock, early: map[domain.UserID]bool{}, passes: map[domain.UserID]time.Time{}}
}

func (r *fakeRoom) Join(_ context.Context, v domain.Voucher, u domain.UserID) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.early[u] {
		return true, nil
	}
	if slices.Contains(r.late, u) {
		return false, nil
	}
	if !r.closed && r.clock.Now().Before(v.BeginsAt) {
		r.early[u] = true
		return true, nil
	}
	r.late = append(r.late, u)
	return false, nil
}

func (r *fakeRoom) line() []domain.UserID { return append(slices.Clone(r.order), r.late...) }

func (r *fakeRoom) Place(_ context.Context, _ domain.VoucherID, u domain.UserID) (ports.RoomPlace, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := ports.RoomPlace{Early: r.early[u], Admitted: int64(r.admitted), Rate: 2, PassExpires: r.passes[u]}
	if i := slices.Index(r.line(), u); i >= 0 && r.installed {
		p.Position = int64(i + 1)
	} else if !p.Early && !slices.Contains(r.late, u) {
		return ports.RoomPlace{}, domain.ErrNotFound
	}
	return p, nil
}

func (r *fakeRoom) Installed(context.Context, domain.VoucherID) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.installed, nil
}

func (r *fakeRoom) Close(_ context.Context, v domain.Voucher) ([]domain.UserID, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.clock.Now().Before(v.BeginsAt) {
		return nil, false, nil
	}
	r.closed = true
	r.closes++
	var out []domain.UserID
	for u := range r.early {
		out = append(out, u)
	}
	return out, true, nil
}

func (r *fakeRoom) Install(_ context.Context, _ domain.Voucher, order []domain.UserID) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failInst > 0 {
		r.failInst--
		return domain.ErrUnavailable
	}
	r.order, r.installed = slices.Clone(order), true
	return nil
}

func (r *fakeRoom) Admit(_ context.Context, _ domain.Voucher, window int, lifetime time.Duration) (ports.Admission, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := ports.Admission{Expires: r.clock.Now().Add(lifetime)}
	line := r.line()
	for len(r.passes) < window && r.admitted < len(line) {
		u := line[r.admitted]
		r.passes[u] = a.Expires
		r.admitted++
		a.Users = append(a.Users, u)
	}
	a.Outstanding = len(r.passes)
	return a, nil
}

// fakeShuffles is a ports.Shuffles in memory.
type fakeShuffles struct {
	mu sync.Mutex
	by map[domain.VoucherID]ports.Shuffle
}

func (s *fakeShuffles) Save(_ context.Context, sh ports.Shuffle) (ports.Shuffle, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.by == nil {
		s.by = map[domain.VoucherID]ports.Shuffle{}
	}
	if old, ok := s.by[sh.Voucher]; ok {
		return old, nil
	}
	sh.Count = len(sh.Entrants)
	s.by[sh.Voucher] = sh
	return sh, nil
}

func (s *fakeShuffles) Get(_ context.Context, id domain.VoucherID, entrants bool) (ports.Shuffle, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sh, ok := s.by[id]
	if !ok {
		return ports.Shuffle{}, domain.ErrNotFound
	}
	if !entrants {
		sh.Entrants = nil
	}
	return sh, nil
}

// fakeLeases is a ports.Leases in memory, on clock.
type fakeLeases struct {
	mu     sync.Mutex
	clock  ports.Clock
	holder map[string]string
	until  map[string]time.Time
}

func (l *fakeLeases) Acquire(_ context.Context, name, holder string, ttl time.Duration) (string, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holder == nil {
		l.holder, l.until = map[string]string{}, map[string]time.Time{}
	}
	now := l.clock.Now()
	if h, ok := l.holder[name]; ok && h != holder && now.Before(l.until[name]) {
		return "", false, nil
	}
	l.holder[name], l.until[name] = holder, now.Add(ttl)
	return "", true, nil
}

func (l *fakeLeases) Release(_ context.Context, name, holder string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holder[name] == holder {
		l.until[name] = l.clock.Now()
	}
	return nil
}

// roomFixture is a waiting-room voucher that begins at start, with its stores.
type roomFixture struct {
	clock    *memory.Clock
	vouchers *memory.Vouchers
	room     *fakeRoom
	shuffles *fakeShuffles
	leases   *fakeLeases
	v        domain.Voucher
	start    time.Time
}

func newRoomFixture(t *testing.T) *roomFixture {
	t.Helper()
	start := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	clock := memory.NewClock(start.Add(-5 * time.Minute))
	f := &roomFixture{clock: clock, vouchers: memory.NewVouchers(), room: newFakeRoom(clock), shuffles: &fakeShuffles{},
		leases: &fakeLeases{clock: clock}, start: start}
	f.v = domain.Voucher{Title: "room", Stock: 10, PerUserLimit: 1, BeginsAt: start, EndsAt: start.Add(time.Hour),
		Admission: domain.AdmissionWaitingRoom, QueueOpensAt: start.Add(-10 * time.Minute), QueueWindow: 3,
		Seed: domain.Seed([]byte("0123456789abcdef0123456789abcdef"))}
	if err := f.vouchers.Create(context.Background(), &f.v, domain.Author{Actor: "1"}, nil); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *roomFixture) admitter(holder string, obs application.RoomObserver) *application.AdmitQueues {
	return application.NewAdmitQueues(f.vouchers, f.room, f.shuffles, f.leases, f.clock, application.RoomOptions{Holder: holder}, obs)
}

func TestAdmitQueuesShufflesOnceSavedBeforeInstalledThenAdmitsWithinTheWindow(t *testing.T) {
	ctx := context.Background()
	f := newRoomFixture(t)
	join := application.NewJoinQueue(f.room, application.NewBuyerGate(f.vouchers, f.clock, application.GateOptions{}))
	for u := domain.UserID(1); u <= 20; u++ {
		if err := join.Handle(ctx, application.JoinQueueCmd{VoucherID: f.v.ID, UserID: u}); err != nil {
			t.Fatal(err)
		}
	}
	savedFirst := false
	obs := application.RoomObserver{Saved: func(domain.VoucherID, int) {
		_, err := f.shuffles.Get(ctx, f.v.ID, false)
		installed, _ := f.room.Installed(ctx, f.v.ID)
		savedFirst = err == nil && !installed
	}}
	a, b := f.admitter("a", obs), f.admitter("b", obs)
	check(t, a.Handle(ctx))
	if f.room.closes != 0 {
		t.Fatal("the room was shuffled before the start")
	}
	entrants := application.NewQueueEntrants(f.vouchers, f.shuffles)
	if _, err := entrants.Handle(ctx, f.v.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("the entrants before the shuffle: %v, want ErrNotFound", err)
	}
	f.clock.Set(f.start)
	// The first instance's install fails: the shuffle is saved, the room not open.
	f.room.failInst = 1
	if err := a.Handle(ctx); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("Handle with a failing install: %v", err)
	}
	sh, err := f.shuffles.Get(ctx, f.v.ID, true)
	check(t, err)
	want := domain.SortEntrants([]domain.UserID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
	if !slices.Equal(sh.Entrants, want) || sh.Digest != domain.EntrantsDigest(want) || sh.Seed != f.v.Seed {
		t.Fatalf("saved shuffle = %+v", sh)
	}
	// Another instance takes over (the lease was let go): the saved shuffle is
	// installed, the room not read again.
	if _, err := f.room.Join(ctx, f.v, 99); err != nil {
		t.Fatal(err)
	}
	check(t, b.Handle(ctx))
	if !savedFirst || f.room.closes != 1 {
		t.Fatalf("saved before installed: %v; closes %d, want 1", savedFirst, f.room.closes)
	}
	if got, err := entrants.Handle(ctx, f.v.ID); err != nil || !slices.Equal(got.Entrants, want) {
		t.Fatalf("the entrants published = %v, %v; want %v", got.Entrants, err, want)
	}
	order := domain.Shuffle(f.v.Seed, want)
	if !slices.Equal(f.room.order, order) {
		t.Fatalf("installed %v, want %v", f.room.order, order)
	}
	if f.room.admitted != 3 {
		t.Fatalf("admitted %d, want the window, 3", f.room.admitted)
	}

	status := application.NewQueueStatus(f.vouchers, f.room, f.shuffles, f.clock, application.PassKey("k"))
	first, err := status.Handle(ctx, f.v.ID, order[0])
	check(t, err)
	if first.Position != 1 || !first.Admitted || first.Pass == "" || first.Shuffle == nil || first.Shuffle.Count != 20 {
		t.Fatalf("first in line = %+v", first)
	}
	if _, err := domain.VerifyPass([]byte("k"), first.Pass, f.v.ID, order[0], f.clock.Now()); err != nil {
		t.Fatalf("the pass does not verify: %v", err)
	}
	last, err := status.Handle(ctx, f.v.ID, 99)
	check(t, err)
	if last.Position != 21 || last.Admitted || last.Ahead != 17 || !last.WaitKnown || last.Wait != 9*time.Second || last.Pass != "" {
		t.Fatalf("the late joiner = %+v; want position 21, 17 ahead, 9 s", last)
	}
	if _, err := status.Handle(ctx, f.v.ID, 1000); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("a user who never joined: %v", err)
	}
}

func TestJoinQueueRefusesWhatTheContractRefuses(t *testing.T) {
	ctx := context.Background()
	f := newRoomFixture(t)
	list := memory.NewDenyList()
	if _, err := list.Deny(ctx, domain.Denial{User: 7}, domain.Author{Actor: "1"}, nil); err != nil {
		t.Fatal(err)
	}
	denied := application.NewDeniedUsers(list)
	check(t, denied.Reload(ctx))
	join := application.NewJoinQueue(f.room, application.NewBuyerGate(f.vouchers, f.clock, application.GateOptions{Denied: denied}))
	plain := domain.Voucher{Title: "plain", Stock: 1, PerUserLimit: 1, BeginsAt: f.start, EndsAt: f.start.Add(time.Hour)}
	check(t, f.vouchers.Create(ctx, &plain, domain.Author{Actor: "1"}, nil))
	for _, c := range []struct {
		name string
		at   time.Time
		v    domain.VoucherID
		user domain.UserID
		want error
	}{
		{"denied", f.start, f.v.ID, 7, domain.ErrDenied},
		{"first come", f.start, plain.ID, 1, domain.ErrNoWaitingRoom},
		{"no such voucher", f.start, 1000, 1, domain.ErrNotFound},
		{"before the queue opens", f.v.QueueOpensAt.Add(-time.Millisecond), f.v.ID, 1, domain.ErrNotStarted},
		{"ended", f.v.EndsAt, f.v.ID, 1, domain.ErrEnded},
		{"open", f.v.QueueOpensAt, f.v.ID, 1, nil},
	} {
		f.clock.Set(c.at)
		if err := join.Handle(ctx, application.JoinQueueCmd{VoucherID: c.v, UserID: c.user}); !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	entrants := application.NewQueueEntrants(f.vouchers, f.shuffles)
	if _, err := entrants.Handle(ctx, plain.ID); !errors.Is(err, domain.ErrNoWaitingRoom) {
		t.Errorf("the entrants of a first-come voucher: %v, want ErrNoWaitingRoom", err)
	}
	if _, err := entrants.Handle(ctx, 1000); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("the entrants of no voucher: %v, want ErrNotFound", err)
	}
}

// check stops the test on an unexpected error.
func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
