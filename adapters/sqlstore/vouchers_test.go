package sqlstore_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// t0 is a fixed instant off UTC and below the database's microsecond precision, so
// the tests see both conversions.
var t0 = time.Date(2026, 11, 29, 20, 0, 0, 123456789, time.FixedZone("UTC+8", 8*60*60))

func newVoucher(title string, begins, ends time.Time) domain.Voucher {
	return domain.Voucher{
		Title:        title,
		Stock:        100,
		BeginsAt:     begins,
		EndsAt:       ends,
		PerUserLimit: 2,
	}
}

func create(t *testing.T, vs *sqlstore.Vouchers, v domain.Voucher) domain.Voucher {
	t.Helper()
	if err := vs.Create(context.Background(), &v, domain.Author{}, nil); err != nil {
		t.Fatalf("Create(%q): %v", v.Title, err)
	}
	return v
}

func list(t *testing.T, vs *sqlstore.Vouchers) []domain.Voucher {
	t.Helper()
	got, err := vs.List(context.Background(), ports.VoucherQuery{Limit: 1000})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	return got
}

func TestVouchersCreateGet(t *testing.T) {
	t.Parallel()
	vs := sqlstore.NewVouchers(openMigrated(t))

	in := newVoucher("Coffee 50% off", t0, t0.Add(time.Hour))
	v := create(t, vs, in)

	if v.ID <= 0 {
		t.Fatalf("Create set ID %d, want a positive id", v.ID)
	}
	if v.CreatedAt.IsZero() || v.CreatedAt.Location() != time.UTC {
		t.Fatalf("Create set CreatedAt %v, want a time in UTC", v.CreatedAt)
	}
	want := domain.Voucher{
		ID:           v.ID,
		Title:        in.Title,
		Stock:        in.Stock,
		BeginsAt:     in.BeginsAt.UTC().Truncate(time.Microsecond),
		EndsAt:       in.EndsAt.UTC().Truncate(time.Microsecond),
		PerUserLimit: in.PerUserLimit,
		Sold:         0,
		CreatedAt:    v.CreatedAt,
		Admission:    domain.AdmissionFirstCome,
		Challenge:    domain.ChallengeNone,
	}
	if v != want {
		t.Fatalf("Create left\n%+v, want\n%+v", v, want)
	}

	got, err := vs.Get(context.Background(), v.ID)
	if err != nil {
		t.Fatalf("Get(%d): %v", v.ID, err)
	}
	if got != want {
		t.Fatalf("Get(%d) =\n%+v, want\n%+v", v.ID, got, want)
	}

	if second := create(t, vs, newVoucher("Tea", t0, t0.Add(time.Hour))); second.ID <= v.ID {
		t.Fatalf("second voucher got id %d, want above %d", second.ID, v.ID)
	}
}

func TestVouchersKeepTheirAdmission(t *testing.T) {
	t.Parallel()
	vs := sqlstore.NewVouchers(openMigrated(t))
	room := newVoucher("Room", t0, t0.Add(time.Hour))
	room.PerUserLimit = 1
	room.Admission, room.Challenge, room.PowDifficulty = domain.AdmissionWaitingRoom, domain.ChallengePow, 20
	room.QueueOpensAt, room.QueueWindow, room.Seed = t0.Add(-time.Minute), 250, domain.NewSeed()
	draw := newVoucher("Draw", t0, t0.Add(time.Hour))
	draw.PerUserLimit = 1
	draw.Admission, draw.Challenge = domain.AdmissionDraw, domain.ChallengeNone
	draw.EntriesOpenAt, draw.Seed = t0.Add(-time.Hour), domain.NewSeed()
	for _, in := range []domain.Voucher{room, draw} {
		v := create(t, vs, in)
		got, err := vs.Get(context.Background(), v.ID)
		if err != nil {
			t.Fatalf("Get(%d): %v", v.ID, err)
		}
		want := in
		want.ID, want.CreatedAt = v.ID, v.CreatedAt
		for _, at := range []*time.Time{&want.BeginsAt, &want.EndsAt, &want.QueueOpensAt, &want.EntriesOpenAt} {
			if !at.IsZero() {
				*at = at.UTC().Truncate(time.Microsecond)
			}
		}
		if v != want || got != want {
			t.Fatalf("%s: Create left\n%+v\nGet read\n%+v\nwant\n%+v", in.Title, v, got, want)
		}
	}
}

func TestVouchersGetNotFound(t *testing.T) {
	t.Parallel()
	vs := sqlstore.NewVouchers(openMigrated(t))
	if _, err := vs.Get(context.Background(), 42); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("Get(42) error = %v, want domain.ErrNotFound", err)
	}
}

func TestVouchersList(t *testing.T) {
	t.Parallel()
	vs := sqlstore.NewVouchers(openMigrated(t))

	if got := list(t, vs); got == nil || len(got) != 0 {
		t.Fatalf("List on an empty table = %#v, want an empty, non-nil slice", got)
	}

	a := create(t, vs, newVoucher("a", t0, t0.Add(time.Hour)))
	b := create(t, vs, newVoucher("b", t0.Add(-time.Hour), t0))
	c := create(t, vs, newVoucher("c", t0, t0.Add(2*time.Hour)))

	if got, want := list(t, vs), []domain.Voucher{c, b, a}; !slices.Equal(got, want) {
		t.Fatalf("List =\n%+v, want newest first\n%+v", got, want)
	}
}

// Vouchers page newest first by id, each page after the last id of the one before,
// and filter by sale status at the given moment, its bounds included as a grab judges
// them: a sale is live from begins_at, and ended from ends_at.
func TestVouchersListPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	vs := sqlstore.NewVouchers(openMigrated(t))
	now := t0.Add(30 * time.Minute)
	live := create(t, vs, newVoucher("live", t0, t0.Add(time.Hour)))
	upcoming := create(t, vs, newVoucher("upcoming", now.Add(time.Millisecond), now.Add(time.Hour)))
	ended := create(t, vs, newVoucher("ended", t0.Add(-time.Hour), t0))
	beginsNow := create(t, vs, newVoucher("begins now", now, now.Add(time.Hour)))
	endsNow := create(t, vs, newVoucher("ends now", t0, now))

	walk := func(status ports.SaleStatus, limit int) []domain.VoucherID {
		t.Helper()
		var ids []domain.VoucherID
		q := ports.VoucherQuery{Status: status, Now: now, Limit: limit}
		for page := 0; ; page++ {
			if page > 10 {
				t.Fatalf("more than 10 pages: %v", ids)
			}
			got, err := vs.List(ctx, q)
			if err != nil {
				t.Fatalf("List(%+v): %v", q, err)
			}
			if len(got) > limit {
				t.Fatalf("page of %d vouchers, limit %d", len(got), limit)
			}
			for _, v := range got {
				ids = append(ids, v.ID)
			}
			if len(got) < limit {
				return ids
			}
			q.Before = got[len(got)-1].ID
		}
	}
	for _, tc := range []struct {
		status ports.SaleStatus
		want   []domain.VoucherID
	}{
		{"", []domain.VoucherID{endsNow.ID, beginsNow.ID, ended.ID, upcoming.ID, live.ID}},
		{ports.SaleLive, []domain.VoucherID{beginsNow.ID, live.ID}},
		{ports.SaleUpcoming, []domain.VoucherID{upcoming.ID}},
		{ports.SaleEnded, []domain.VoucherID{endsNow.ID, ended.ID}},
	} {
		for _, limit := range []int{1, 2, 5, 200} {
			if got := walk(tc.status, limit); !slices.Equal(got, tc.want) {
				t.Errorf("status %q, pages of %d: %v, want %v", tc.status, limit, got, tc.want)
			}
		}
	}
	var ve *domain.ValidationError
	if _, err := vs.List(ctx, ports.VoucherQuery{}); !errors.As(err, &ve) || ve.Field != "limit" {
		t.Fatalf("List with limit 0: %v, want a validation error on limit", err)
	}
	if _, err := vs.List(ctx, ports.VoucherQuery{Status: "soon", Limit: 1}); !errors.As(err, &ve) || ve.Field != "status" {
		t.Fatalf("List with status soon: %v, want a validation error on status", err)
	}
}

func TestVouchersActive(t *testing.T) {
	t.Parallel()
	vs := sqlstore.NewVouchers(openMigrated(t))
	now := t0.Truncate(time.Microsecond)

	ended := create(t, vs, newVoucher("ended", now.Add(-2*time.Hour), now.Add(-time.Hour)))
	endsNow := create(t, vs, newVoucher("ends now", now.Add(-time.Hour), now))
	running := create(t, vs, newVoucher("running", now.Add(-time.Hour), now.Add(time.Microsecond)))
	upcoming := create(t, vs, newVoucher("upcoming", now.Add(time.Hour), now.Add(2*time.Hour)))

	got, err := vs.Active(context.Background(), now)
	if err != nil {
		t.Fatalf("Active: %v", err)
	}
	if want := []domain.Voucher{upcoming, running}; !slices.Equal(got, want) {
		t.Fatalf("Active(%v) =\n%+v, want\n%+v", now, got, want)
	}

	// The boundary agrees with the domain's own judgement of the sale window.
	for _, v := range []domain.Voucher{ended, endsNow} {
		if err := v.Window(now); !errors.Is(err, domain.ErrEnded) {
			t.Errorf("%q.Window(now) = %v, want domain.ErrEnded", v.Title, err)
		}
	}
}

// The use case validates first; the table's CHECKs still refuse what slips past, and
// Create reports it as invalid input naming the field.
func TestVouchersCreateRejectedByChecks(t *testing.T) {
	t.Parallel()
	vs := sqlstore.NewVouchers(openMigrated(t))
	tests := map[string]struct {
		edit  func(*domain.Voucher)
		field string
	}{
		"zero stock":      {func(v *domain.Voucher) { v.Stock = 0 }, "stock"},
		"negative stock":  {func(v *domain.Voucher) { v.Stock = -5 }, "stock"},
		"empty window":    {func(v *domain.Voucher) { v.EndsAt = v.BeginsAt }, "ends_at"},
		"inverted window": {func(v *domain.Voucher) { v.EndsAt = v.BeginsAt.Add(-time.Hour) }, "ends_at"},
		"zero limit":      {func(v *domain.Voucher) { v.PerUserLimit = 0 }, "per_user_limit"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			v := newVoucher(name, t0, t0.Add(time.Hour))
			tc.edit(&v)
			err := vs.Create(context.Background(), &v, domain.Author{}, nil)
			var verr *domain.ValidationError
			if !errors.Is(err, domain.ErrInvalid) || !errors.As(err, &verr) {
				t.Fatalf("Create error = %v, want a *domain.ValidationError", err)
			}
			if got, want := verr.Field, tc.field; got != want {
				t.Fatalf("invalid field = %q, want %q (error %v)", got, want, err)
			}
			if v.ID != 0 {
				t.Fatalf("a refused Create set ID %d", v.ID)
			}
		})
	}

	if got := list(t, vs); len(got) != 0 {
		t.Fatalf("refused vouchers were stored: %+v", got)
	}
}
