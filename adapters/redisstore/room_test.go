package redisstore_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// testRoom is a waiting room and a stock sharing one prefix on the test server, and
// the clock the room's scripts judge by (Unix ms).
type testRoom struct {
	*redisstore.WaitingRoom
	stock  *redisstore.Stock
	at     *int64
	keys   redisstore.Keys
	client redis.UniversalClient
}

// room returns a testRoom whose clock starts at now.
func room(t testing.TB) testRoom {
	t.Helper()
	client := testenv.Redis(t)
	opts := redisstore.Options{Prefix: "t" + testenv.Unique()}
	w := redisstore.NewWaitingRoom(client, opts)
	at := now.UnixMilli()
	w.SetNow(func() int64 { return at })
	return testRoom{WaitingRoom: w, stock: redisstore.NewStock(client, opts), at: &at, keys: redisstore.Keys{Prefix: opts.Prefix}, client: client}
}

func TestWaitingRoomShufflesEarlyJoinersThenAdmitsWithinTheWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := room(t)
	stock, at := w.stock, w.at
	v := voucher(1, 15, 1) // on sale from an hour before now
	if _, err := stock.Warm(ctx, v); err != nil {
		t.Fatal(err)
	}
	*at = v.BeginsAt.UnixMilli() - 1000
	for u := domain.UserID(1); u <= 8; u++ {
		early, err := w.Join(ctx, v, u)
		if err != nil || !early {
			t.Fatalf("Join(%d) before the start = %v, %v; want early", u, early, err)
		}
	}
	if early, err := w.Join(ctx, v, 3); err != nil || !early {
		t.Fatalf("Join(3) again = %v, %v; want early (the same place)", early, err)
	}
	if _, err := w.Place(ctx, v.ID, 99); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("Place of a user who never joined: %v, want ErrNotFound", err)
	}
	if p, err := w.Place(ctx, v.ID, 3); err != nil || !p.Early || p.Position != 0 {
		t.Fatalf("Place(3) before the shuffle = %+v, %v; want early, position unknown", p, err)
	}
	if _, closed, err := w.Close(ctx, v); err != nil || closed {
		t.Fatalf("Close before the start = %v, %v; want not closed", closed, err)
	}

	*at = v.BeginsAt.UnixMilli()
	early, closed, err := w.Close(ctx, v)
	if err != nil || !closed {
		t.Fatalf("Close at the start = %v, %v", closed, err)
	}
	slices.Sort(early)
	if want := []domain.UserID{1, 2, 3, 4, 5, 6, 7, 8}; !slices.Equal(early, want) {
		t.Fatalf("early joiners = %v, want %v", early, want)
	}
	// Joiners from the start on are late, in arrival order, whatever the clock
	// says once closed.
	*at = v.BeginsAt.UnixMilli() - 1
	for u := domain.UserID(20); u < 30; u++ {
		if e, err := w.Join(ctx, v, u); err != nil || e {
			t.Fatalf("Join(%d) after the close = %v, %v; want late", u, e, err)
		}
	}
	if e, err := w.Join(ctx, v, 25); err != nil || e {
		t.Fatalf("Join(25) again = %v, %v", e, err)
	}
	*at = v.BeginsAt.UnixMilli() + 10
	if a, err := w.Admit(ctx, v, 5, time.Minute, nil); err != nil || len(a.Users) != 0 || a.Outstanding != -1 {
		t.Fatalf("Admit before the install = %+v, %v; want nothing", a, err)
	}
	order := []domain.UserID{5, 3, 8, 1, 7, 2, 6, 4}
	check(t, w.Install(ctx, v, order))
	if ok, err := w.Installed(ctx, v.ID); err != nil || !ok {
		t.Fatalf("Installed = %v, %v", ok, err)
	}
	for i, u := range order {
		p, err := w.Place(ctx, v.ID, u)
		if err != nil || p.Position != int64(i+1) || !p.Early {
			t.Fatalf("Place(%d) = %+v, %v; want position %d", u, p, err, i+1)
		}
	}
	if p, err := w.Place(ctx, v.ID, 25); err != nil || p.Position != int64(len(order)+6) {
		t.Fatalf("Place(25) = %+v, %v; want position %d", p, err, len(order)+6)
	}

	// The window: 5 passes at most outstanding.
	a, err := w.Admit(ctx, v, 5, time.Minute, nil)
	check(t, err)
	if !slices.Equal(a.Users, order[:5]) || a.Outstanding != 5 || a.Expires.UnixMilli() != *at+60000 {
		t.Fatalf("Admit = %+v; want %v, 5 outstanding", a, order[:5])
	}
	if a, err := w.Admit(ctx, v, 5, time.Minute, nil); err != nil || len(a.Users) != 0 || a.Outstanding != 5 {
		t.Fatalf("Admit with the window full = %+v, %v", a, err)
	}
	p, err := w.Place(ctx, v.ID, order[0])
	if err != nil || p.Admitted != 5 || p.PassExpires.UnixMilli() != *at+60000 {
		t.Fatalf("Place of the first = %+v, %v; want admitted 5, a pass", p, err)
	}
	// A pass used (the grab removes it) frees a place in the window.
	check(t, w.client.ZRem(ctx, w.keys.Passes(v.ID), order[0].String()).Err())
	if a, err := w.Admit(ctx, v, 5, time.Minute, nil); err != nil || !slices.Equal(a.Users, order[5:6]) {
		t.Fatalf("Admit after a pass was used = %+v, %v; want %v", a, err, order[5:6])
	}
	// Passes expire: the next ones, the shuffled first, then the late in order.
	*at += 60001
	a, err = w.Admit(ctx, v, 5, time.Minute, nil)
	check(t, err)
	if want := []domain.UserID{6, 4, 20, 21, 22}; !slices.Equal(a.Users, want) || a.Outstanding != 5 {
		t.Fatalf("Admit after the passes expired = %+v; want %v", a, want)
	}
	if p, err := w.Place(ctx, v.ID, order[1]); err != nil || !p.PassExpires.IsZero() || p.Admitted != 11 {
		t.Fatalf("Place of an expired pass's user = %+v, %v", p, err)
	}
	if p, err := w.Place(ctx, v.ID, 29); err != nil || p.Position != 18 || p.SoldOut || p.Rate <= 0 {
		t.Fatalf("Place(29) = %+v, %v; want position 18, a rate", p, err)
	}
	// Sold out: no one else is let in, and everyone reads it.
	check(t, w.client.HSet(ctx, w.keys.Meta(v.ID), "remaining", 0).Err())
	*at += 60001
	if a, err := w.Admit(ctx, v, 5, time.Minute, nil); err != nil || len(a.Users) != 0 || a.Outstanding != 0 {
		t.Fatalf("Admit once sold out = %+v, %v", a, err)
	}
	if p, err := w.Place(ctx, v.ID, 29); err != nil || !p.SoldOut || p.Admitted != 11 {
		t.Fatalf("Place(29) once sold out = %+v, %v", p, err)
	}
}

func TestWaitingRoomInstallsALongOrderInChunksAndStartsOverWhenCutShort(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := room(t)
	v := voucher(1, 10, 1)
	order := make([]domain.UserID, 12345)
	for i := range order {
		order[i] = domain.UserID(len(order) - i)
	}
	// An install cut short: its first chunk only. Admission stays closed.
	check(t, w.Install(ctx, v, order[:100]))
	check(t, w.client.HDel(ctx, w.keys.Room(v.ID), "installed").Err())
	if ok, err := w.Installed(ctx, v.ID); err != nil || ok {
		t.Fatalf("Installed after a cut-short install = %v, %v", ok, err)
	}
	check(t, w.Install(ctx, v, order))
	for _, i := range []int{0, 4999, 5000, 12344} {
		if p, err := w.Place(ctx, v.ID, order[i]); err != nil || p.Position != int64(i+1) {
			t.Fatalf("Place(%d) = %+v, %v; want position %d", order[i], p, err, i+1)
		}
	}
	if n, err := w.client.LLen(ctx, w.keys.RoomLine(v.ID)).Result(); err != nil || n != int64(len(order)) {
		t.Fatalf("line of %d, %v; want %d", n, err, len(order))
	}
	// Installed: a second install changes nothing.
	check(t, w.Install(ctx, v, order[:10]))
	if n, _ := w.client.LLen(ctx, w.keys.RoomLine(v.ID)).Result(); n != int64(len(order)) {
		t.Fatalf("a second install changed the line to %d", n)
	}
}

// TestWaitingRoomPassesOverBuyersAfterRedisForgot: three users are let in and two of
// them buy; then Redis forgets everything of the voucher. The heal loads the sale
// state "restoring" and the room's order is installed again from its start: no one is
// let in until the orders are restored, and then the window goes to the users after
// the buyers (the one let in who did not buy among them), never to a buyer, whose grab
// would answer already_purchased while its pass held a place of the window.
func TestWaitingRoomPassesOverBuyersAfterRedisForgot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := room(t)
	audit := redisstore.NewAudit(w.client, redisstore.Options{Prefix: w.keys.Prefix})
	v := voucher(1, 10, 1)
	if _, err := w.stock.Warm(ctx, v); err != nil {
		t.Fatal(err)
	}
	order := []domain.UserID{5, 3, 8, 1, 7, 2, 6, 4}
	check(t, w.Install(ctx, v, order))
	a, err := w.Admit(ctx, v, 3, time.Minute, nil)
	if err != nil || !slices.Equal(a.Users, order[:3]) {
		t.Fatalf("Admit = %+v, %v; want %v", a, err, order[:3])
	}
	bought := []domain.Reservation{grab(v.ID, order[0], 1), grab(v.ID, order[1], 1)}
	for _, r := range bought {
		check(t, w.stock.Reserve(ctx, r))
	}

	// Redis forgets (a restart without persistence): every key of the test, on every
	// master of a cluster, one at a time (a cluster refuses a DEL across slots).
	forget := func(ctx context.Context, c redis.Cmdable) error {
		keys, err := c.Keys(ctx, w.keys.Prefix+":*").Result()
		for _, k := range keys {
			err = errors.Join(err, c.Del(ctx, k).Err())
		}
		return err
	}
	if cc, ok := w.client.(*redis.ClusterClient); ok {
		check(t, cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return forget(ctx, c) }))
	} else {
		check(t, forget(ctx, w.client))
	}

	// The heal: the state comes back restoring, the order installed again.
	v.Sold = len(bought)
	if got, err := w.stock.Warm(ctx, v); err != nil || got != ports.WarmRestoring {
		t.Fatalf("Warm after the loss = %v, %v; want restoring", got, err)
	}
	check(t, w.Install(ctx, v, order))
	if a, err := w.Admit(ctx, v, 3, time.Minute, nil); err != nil || len(a.Users) != 0 {
		t.Fatalf("Admit while the orders are restored = %+v, %v; want no one", a, err)
	}
	restored, err := audit.Restore(ctx, live(bought...)...)
	if err != nil || !slices.Equal(restored, []bool{true, true}) {
		t.Fatalf("Restore = %v, %v", restored, err)
	}
	if _, err := audit.Recount(ctx, v.ID); err != nil {
		t.Fatal(err)
	}
	check(t, audit.Restored(ctx, v.ID))

	a, err = w.Admit(ctx, v, 3, time.Minute, nil)
	if want := order[2:5]; err != nil || !slices.Equal(a.Users, want) || a.Outstanding != 3 {
		t.Fatalf("Admit after the heal = %+v, %v; want %v, not the buyers %v", a, err, want, order[:2])
	}
	for i, u := range order[:2] {
		p, err := w.Place(ctx, v.ID, u)
		if err != nil || p.Position != int64(i+1) || p.Admitted != 5 || !p.PassExpires.IsZero() {
			t.Fatalf("Place of buyer %d = %+v, %v; want position %d, let in, no pass", u, p, err, i+1)
		}
	}
	if p, err := w.Place(ctx, v.ID, order[5]); err != nil || p.Position != 6 || p.Admitted != 5 {
		t.Fatalf("Place of the next in line = %+v, %v; want position 6, 5 let in", p, err)
	}
}

// TestWaitingRoomFiguresCountJoinsAdmissionsAndPasses: the figures an admin reads of a
// room follow its joins (early before the start, then late), its shuffle's install,
// its admissions, a pass used by a grab and the passes' expiry (read without another
// admission step dropping them).
func TestWaitingRoomFiguresCountJoinsAdmissionsAndPasses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := room(t)
	v := voucher(1, 10, 1) // on sale from an hour before now
	v.Admission = domain.AdmissionWaitingRoom
	if _, err := w.stock.Warm(ctx, v); err != nil {
		t.Fatal(err)
	}
	figures := func(when string, want ports.RoomFigures) {
		t.Helper()
		if f, err := w.Figures(ctx, v.ID); err != nil || f != want {
			t.Fatalf("Figures %s = %+v, %v; want %+v", when, f, err, want)
		}
	}
	figures("of a room no one joined", ports.RoomFigures{})
	*w.at = v.BeginsAt.UnixMilli() - 1000
	for u := domain.UserID(1); u <= 4; u++ {
		if _, err := w.Join(ctx, v, u); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Join(ctx, v, 2); err != nil { // again: the same place
		t.Fatal(err)
	}
	figures("before the start", ports.RoomFigures{Early: 4})
	*w.at = v.BeginsAt.UnixMilli()
	if _, closed, err := w.Close(ctx, v); err != nil || !closed {
		t.Fatalf("Close at the start = %v, %v", closed, err)
	}
	for _, u := range []domain.UserID{10, 11} {
		if _, err := w.Join(ctx, v, u); err != nil {
			t.Fatal(err)
		}
	}
	figures("closed, not installed", ports.RoomFigures{Early: 4, Late: 2})
	order := []domain.UserID{3, 1, 4, 2}
	check(t, w.Install(ctx, v, order))
	figures("installed", ports.RoomFigures{Early: 4, Late: 2})

	// Let in at the grabs' time (grab judges them at now), so that the grab takes
	// the pass before it expires.
	*w.at = now.UnixMilli()
	a, err := w.Admit(ctx, v, 3, time.Minute, nil)
	if err != nil || !slices.Equal(a.Users, order[:3]) {
		t.Fatalf("Admit = %+v, %v; want %v", a, err, order[:3])
	}
	figures("after an admission", ports.RoomFigures{Early: 4, Late: 2, Admitted: 3, Outstanding: 3})
	r := grab(v.ID, order[0], 1)
	r.Pass = a.Expires
	check(t, w.stock.Reserve(ctx, r))
	figures("after a grab used a pass", ports.RoomFigures{Early: 4, Late: 2, Admitted: 3, Outstanding: 2})
	*w.at = a.Expires.UnixMilli()
	figures("once the passes expired", ports.RoomFigures{Early: 4, Late: 2, Admitted: 3})
}

func TestWaitingRoomSpendForgetsOnlyThatPass(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := room(t)
	v := voucher(3, 10, 1)
	k := w.keys
	expires := time.UnixMilli(*w.at + 60000)
	check(t, w.client.ZAdd(ctx, k.Passes(v.ID), redis.Z{Score: float64(expires.UnixMilli()), Member: "7"}).Err())
	check(t, w.Spend(ctx, v.ID, 7, expires.Add(time.Millisecond)))
	if n, _ := w.client.ZCard(ctx, k.Passes(v.ID)).Result(); n != 1 {
		t.Fatalf("another pass's spend forgot the user's: %d passes left", n)
	}
	check(t, w.Spend(ctx, v.ID, 8, expires))
	check(t, w.Spend(ctx, v.ID, 7, expires))
	if n, _ := w.client.ZCard(ctx, k.Passes(v.ID)).Result(); n != 0 {
		t.Fatalf("the pass spent is still outstanding: %d passes", n)
	}
}
