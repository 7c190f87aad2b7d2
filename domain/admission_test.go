package domain_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/domain"
)

// countingSeed is the seed 0, 1, …, 31: the published example of the contract's
// permutation.
func countingSeed() domain.Seed {
	var s domain.Seed
	for i := range s {
		s[i] = byte(i)
	}
	return s
}

func TestShuffleIsTheContractsPermutation(t *testing.T) {
	// The entrants come in any order: the shuffle sorts them first.
	entrants := []domain.UserID{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}
	got := domain.Shuffle(countingSeed(), entrants)
	// Golden: rand.New(rand.NewChaCha8(seed)).Shuffle of 1…10 (math/rand/v2). A
	// change here breaks every published draw: anyone's recomputation would differ.
	want := []domain.UserID{5, 3, 10, 9, 8, 2, 4, 1, 6, 7}
	if !slices.Equal(got, want) {
		t.Fatalf("Shuffle = %v, want %v", got, want)
	}
	if !slices.Equal(entrants, []domain.UserID{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}) {
		t.Fatalf("Shuffle changed its argument: %v", entrants)
	}
	if again := domain.Shuffle(countingSeed(), slices.Clone(want)); !slices.Equal(again, want) {
		t.Fatalf("the same entrants in another order shuffle to %v, want %v", again, want)
	}
	other := countingSeed()
	other[0] = 1
	if slices.Equal(domain.Shuffle(other, entrants), want) {
		t.Fatal("another seed gave the same order")
	}
}

func TestEntrantsDigestAndCommitment(t *testing.T) {
	ids := domain.SortEntrants([]domain.UserID{3, 10, 1, 2, 9, 8, 7, 6, 5, 4})
	if !slices.Equal(ids, []domain.UserID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}) {
		t.Fatalf("SortEntrants = %v: sorted as numbers, not as text", ids)
	}
	// printf '1\n2\n…\n10\n' | sha256sum
	if got, want := domain.EntrantsDigest(ids), "bf794518e35d7f1ce3a50b3058c4191bb9401e568fc645d77e10b0f404cf1f22"; got != want {
		t.Errorf("EntrantsDigest = %s, want %s", got, want)
	}
	// python3 -c "import hashlib; print(hashlib.sha256(bytes(range(32))).hexdigest())"
	v := domain.Voucher{Seed: countingSeed()}
	if got, want := v.Commitment(), "630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd"; got != want {
		t.Errorf("Commitment = %s, want %s", got, want)
	}
	if c := (domain.Voucher{}).Commitment(); c != "" {
		t.Errorf("a voucher without a seed has commitment %q", c)
	}
	if a, b := domain.NewSeed(), domain.NewSeed(); a == domain.NoSeed || a == b {
		t.Error("NewSeed drew the zero seed or the same seed twice")
	}
}

func TestPassesAreCheckedWithoutAStore(t *testing.T) {
	key := []byte("pass key of the test, 32 bytes..")
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	p := domain.Pass{Voucher: 7, User: 42, Expires: now.Add(domain.PassLifetime)}
	token := domain.SignPass(key, p)
	got, err := domain.VerifyPass(key, token, 7, 42, now)
	if err != nil || got != p {
		t.Fatalf("VerifyPass = %+v, %v; want %+v", got, err, p)
	}
	forged := []byte(token)
	forged[len(forged)-1] ^= 1
	refused := map[string]func() error{
		"another key":     func() error { _, err := domain.VerifyPass([]byte("another key"), token, 7, 42, now); return err },
		"another user":    func() error { _, err := domain.VerifyPass(key, token, 7, 43, now); return err },
		"another voucher": func() error { _, err := domain.VerifyPass(key, token, 8, 42, now); return err },
		"expired": func() error {
			_, err := domain.VerifyPass(key, token, 7, 42, p.Expires)
			return err
		},
		"forged": func() error { _, err := domain.VerifyPass(key, string(forged), 7, 42, now); return err },
		"respelt": func() error {
			_, err := domain.VerifyPass(key, respell(token), 7, 42, now)
			return err
		},
		"with a line break": func() error {
			_, err := domain.VerifyPass(key, token[:10]+"\n"+token[10:], 7, 42, now)
			return err
		},
		"truncated": func() error { _, err := domain.VerifyPass(key, token[:len(token)-2], 7, 42, now); return err },
		"empty":     func() error { _, err := domain.VerifyPass(key, "", 7, 42, now); return err },
		"not base64": func() error {
			_, err := domain.VerifyPass(key, "!!!!", 7, 42, now)
			return err
		},
	}
	for name, verify := range refused {
		if err := verify(); !errors.Is(err, domain.ErrQueueRequired) {
			t.Errorf("%s: VerifyPass = %v, want ErrQueueRequired", name, err)
		}
	}
}

func TestAdmissionSettings(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	base := domain.Voucher{Title: "t", Stock: 10, PerUserLimit: 1, BeginsAt: now.Add(time.Hour), EndsAt: now.Add(2 * time.Hour)}

	room := base
	room.Admission = domain.AdmissionWaitingRoom
	room = room.WithAdmissionDefaults(now)
	if room.QueueWindow != domain.DefaultQueueWindow || !room.QueueOpensAt.Equal(base.BeginsAt.Add(-10*time.Minute)) || room.Challenge != domain.ChallengeNone {
		t.Fatalf("waiting room defaults: %+v", room)
	}
	if err := room.ValidateNew(now); err == nil {
		t.Fatal("a waiting room without a seed validated")
	}
	room.Seed = domain.NewSeed()
	if err := room.ValidateNew(now); err != nil {
		t.Fatalf("waiting room: %v", err)
	}

	draw := base
	draw.Admission, draw.Challenge, draw.Seed = domain.AdmissionDraw, domain.ChallengePow, domain.NewSeed()
	draw = draw.WithAdmissionDefaults(now)
	if !draw.EntriesOpenAt.Equal(now) || draw.PowDifficulty != domain.DefaultPowDifficulty || draw.QueueWindow != 0 {
		t.Fatalf("draw defaults: %+v", draw)
	}
	if err := draw.ValidateNew(now); err != nil {
		t.Fatalf("draw: %v", err)
	}

	first := base.WithAdmissionDefaults(now)
	if first.Admission != domain.AdmissionFirstCome || first.Challenge != domain.ChallengeNone || first.QueueWindow != 0 {
		t.Fatalf("first come defaults: %+v", first)
	}
	if err := first.ValidateNew(now); err != nil {
		t.Fatalf("first come: %v", err)
	}

	for _, c := range []struct {
		name  string
		field string
		edit  func(*domain.Voucher)
	}{
		{"unknown mode", "admission", func(v *domain.Voucher) { v.Admission = "lottery" }},
		{"unknown challenge", "challenge", func(v *domain.Voucher) { v.Challenge = "captcha" }},
		{"difficulty too high", "pow_difficulty", func(v *domain.Voucher) { v.Challenge, v.PowDifficulty = domain.ChallengePow, 33 }},
		{"window of 0", "queue_window", func(v *domain.Voucher) { *v = room; v.QueueWindow = 0 }},
		{"window too wide", "queue_window", func(v *domain.Voucher) { *v = room; v.QueueWindow = domain.MaxQueueWindow + 1 }},
		{"queue opening at the start", "queue_opens_at", func(v *domain.Voucher) { *v = room; v.QueueOpensAt = v.BeginsAt }},
		{"entries opening at the start", "entries_open_at", func(v *domain.Voucher) { *v = draw; v.EntriesOpenAt = v.BeginsAt }},
		{"two units per winner", "per_user_limit", func(v *domain.Voucher) { *v = draw; v.PerUserLimit = 2 }},
		{"a draw already due", "begins_at", func(v *domain.Voucher) { *v = draw; v.BeginsAt, v.EntriesOpenAt = now, now.Add(-time.Minute) }},
		{"a first-come seed", "seed", func(v *domain.Voucher) { v.Seed = domain.NewSeed() }},
	} {
		v := first
		c.edit(&v)
		var verr *domain.ValidationError
		if err := v.ValidateNew(now); !errors.As(err, &verr) || verr.Field != c.field {
			t.Errorf("%s: ValidateNew = %v, want a validation error on %s", c.name, err, c.field)
		}
	}
}

func TestTheAuditOfACreationNamesTheAdmissionButNeverTheSeed(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	v := domain.Voucher{ID: 3, Title: "t", Stock: 10, PerUserLimit: 1, BeginsAt: now.Add(time.Hour), EndsAt: now.Add(2 * time.Hour),
		Admission: domain.AdmissionWaitingRoom, Challenge: domain.ChallengePow, Seed: countingSeed()}
	v = v.WithAdmissionDefaults(now)
	e := domain.VoucherAudit(domain.AuditVoucherCreate, domain.Author{Actor: "1"}, nil, v)
	after := string(e.After)
	for _, want := range []string{`"admission":"waiting_room"`, `"challenge":"pow"`, `"pow_difficulty":16`, `"queue_window":500`,
		`"commitment":"630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd"`} {
		if !strings.Contains(after, want) {
			t.Errorf("audit after = %s, want it to hold %s", after, want)
		}
	}
	if strings.Contains(after, "seed") || strings.Contains(after, "000102030405") {
		t.Errorf("audit after = %s: it shows the seed", after)
	}
}

// A waiting room's shuffle and a draw are one record: the entrants sorted, counted
// and digested as published, the order the contract's permutation, the time to the
// millisecond in UTC.
func TestSeededShuffleIsTheRecordOfRoomsAndDraws(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 6, 10, 0, 0, 123_456_789, time.FixedZone("x", 3600))
	entrants := []domain.UserID{10, 3, 7, 1, 9, 2, 8, 4, 6, 5}
	sh := domain.NewSeededShuffle(4, countingSeed(), entrants, at)
	sorted := []domain.UserID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if !slices.Equal(sh.Entrants, sorted) || sh.Count != 10 || sh.Digest != domain.EntrantsDigest(sorted) ||
		!sh.At.Equal(at.Truncate(time.Millisecond)) || sh.At.Location() != time.UTC || sh.Voucher != 4 {
		t.Fatalf("record = %+v", sh)
	}
	if want := []domain.UserID{5, 3, 10, 9, 8, 2, 4, 1, 6, 7}; !slices.Equal(sh.Order(), want) {
		t.Fatalf("order = %v, want the contract's %v", sh.Order(), want)
	}
	d := domain.NewDraw(domain.Voucher{ID: 4, Seed: countingSeed(), Stock: 3}, entrants, at)
	if !slices.Equal(d.Entrants, sh.Entrants) || d.Digest != sh.Digest || d.Count != sh.Count || !d.At.Equal(sh.At) || d.Winners != 3 {
		t.Fatalf("draw = %+v, want the record %+v with 3 winners", d, sh)
	}
}
