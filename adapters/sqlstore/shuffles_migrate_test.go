package sqlstore_test

import (
	"context"
	"encoding/binary"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/domain"
)

// packedVersion is the migration that packs room_shuffles' entrants.
const packedVersion = "20261209000000"

// shuffledAt is when the old rows' shuffles ran, as stored (to the millisecond).
var shuffledAt = t0.UTC().Truncate(time.Millisecond)

// wideShuffle is a room_shuffles row as a binary before packedVersion wrote it.
type wideShuffle struct {
	voucher  domain.VoucherID
	count    int
	entrants []byte
}

// wide encodes ids as the old room_shuffles did: 8 bytes big-endian each.
func wide(ids ...domain.UserID) []byte {
	b := make([]byte, 0, 8*len(ids))
	for _, id := range ids {
		b = binary.BigEndian.AppendUint64(b, uint64(id))
	}
	return b
}

// openBeforePacked opens a fresh database migrated up to packedVersion, exclusive,
// holding rows in the old encoding.
func openBeforePacked(t *testing.T, rows ...wideShuffle) *bun.DB {
	t.Helper()
	ctx := context.Background()
	db := openDB(t)
	if err := sqlstore.MigrateBefore(ctx, db, packedVersion); err != nil {
		t.Fatalf("migrate before %s: %v", packedVersion, err)
	}
	seed := []byte("0123456789abcdef0123456789abcdef")
	for _, r := range rows {
		_, err := db.NewRaw("INSERT INTO room_shuffles (voucher_id, seed, entrants_count, entrants_digest, entrants, shuffled_at) "+
			"VALUES (?, ?, ?, ?, ?, ?)", int64(r.voucher), seed, r.count, "digest", r.entrants, shuffledAt).Exec(ctx)
		if err != nil {
			t.Fatalf("insert the old shuffle of voucher %s: %v", r.voucher, err)
		}
	}
	return db
}

// Shuffles saved by a binary before the packing migration read back the same after it,
// and after it is rolled back the old bytes are there again.
func TestRoomShufflesMigrateToPackedEntrants(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	many := make([]domain.UserID, 1000)
	for i := range many {
		many[i] = domain.UserID(i*i*7919 + 3)
	}
	want := map[domain.VoucherID][]domain.UserID{7: {1, 5, 1 << 40}, 8: nil, 9: many}
	var rows []wideShuffle
	for v, ids := range want {
		rows = append(rows, wideShuffle{voucher: v, count: len(ids), entrants: wide(ids...)})
	}
	db := openBeforePacked(t, rows...)

	applied, err := sqlstore.MigrateUp(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if len(applied) == 0 || !strings.HasPrefix(applied[0], packedVersion+"_") {
		t.Fatalf("up applied %q, want %s first", applied, packedVersion)
	}
	readBack := func(when string) {
		t.Helper()
		s := sqlstore.NewShuffles(db)
		for v, ids := range want {
			got, err := s.Get(ctx, v, true)
			if err != nil {
				t.Fatalf("%s: Get(%s): %v", when, v, err)
			}
			if !slices.Equal(got.Entrants, ids) || got.Count != len(ids) || got.Digest != "digest" || !got.At.Equal(shuffledAt) {
				t.Fatalf("%s: Get(%s) = %d entrants (%+v), want %d", when, v, len(got.Entrants), got, len(ids))
			}
		}
	}
	readBack("after up")

	// Rolled back (the group of the packing migration and any after it), the rows hold
	// the old bytes in the old column again.
	if _, err := sqlstore.MigrateDown(ctx, db); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		var got []byte
		err := db.NewRaw("SELECT entrants FROM room_shuffles WHERE voucher_id = ?", int64(r.voucher)).Scan(ctx, &got)
		if err != nil || !slices.Equal(got, r.entrants) {
			t.Fatalf("after down, the shuffle of voucher %s holds %d bytes (%v), want %d", r.voucher, len(got), err, len(r.entrants))
		}
	}
	if _, err := sqlstore.MigrateUp(ctx, db); err != nil {
		t.Fatal(err)
	}
	readBack("after up again")
}

// A row the packing migration cannot read fails it, naming the voucher, and leaves
// the schema and every row as they were.
func TestRoomShufflesMigrationRefusesACorruptRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, corrupt := range map[string]wideShuffle{
		"short":    {voucher: 9, count: 2, entrants: wide(4, 5)[:15]},
		"unsorted": {voucher: 9, count: 2, entrants: wide(5, 4)},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			good := wideShuffle{voucher: 1, count: 2, entrants: wide(2, 3)}
			db := openBeforePacked(t, good, corrupt)
			_, err := sqlstore.MigrateUp(ctx, db)
			if err == nil || !strings.Contains(err.Error(), "voucher 9") {
				t.Fatalf("MigrateUp = %v, want an error naming voucher 9", err)
			}
			pending, err := sqlstore.PendingMigrations(ctx, db)
			if err != nil || len(pending) == 0 || !strings.HasPrefix(pending[0], packedVersion+"_") {
				t.Fatalf("pending after the failure = %q, %v; want %s first", pending, err, packedVersion)
			}
			var got []byte
			err = db.NewRaw("SELECT entrants FROM room_shuffles WHERE voucher_id = 1").Scan(ctx, &got)
			if err != nil || !slices.Equal(got, good.entrants) {
				t.Fatalf("after the failure, voucher 1's entrants = %x, %v; want the old %x", got, err, good.entrants)
			}
		})
	}
}

// The room's record and the draw's are one encoding: what a shuffle saves unpacks as
// a draw's entrant_ids do.
func TestRoomShuffleEntrantsArePacked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openMigrated(t)
	ids := []domain.UserID{3, 10, 1 << 40}
	sh := domain.SeededShuffle{Voucher: 4, Entrants: ids, Digest: domain.EntrantsDigest(ids), At: time.Now()}
	if _, err := sqlstore.NewShuffles(db).Save(ctx, sh); err != nil {
		t.Fatal(err)
	}
	var got []byte
	if err := db.NewRaw("SELECT entrant_ids FROM room_shuffles WHERE voucher_id = 4").Scan(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if want := domain.PackEntrants(ids); !slices.Equal(got, want) {
		t.Fatalf("entrant_ids = %x, want domain.PackEntrants %x", got, want)
	}
}

// Rolling the packing back fails, naming the voucher, on a row whose entrant_ids do
// not unpack to its count.
func TestRoomShufflesRollbackRefusesACorruptRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openBeforePacked(t, wideShuffle{voucher: 1, count: 2, entrants: wide(2, 3)})
	if _, err := sqlstore.MigrateUp(ctx, db); err != nil {
		t.Fatal(err)
	}
	if _, err := db.NewRaw("UPDATE room_shuffles SET entrants_count = 3 WHERE voucher_id = 1").Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlstore.MigrateDown(ctx, db); err == nil || !strings.Contains(err.Error(), "voucher 1") {
		t.Fatalf("MigrateDown = %v, want an error naming voucher 1", err)
	}
	if _, err := sqlstore.NewShuffles(db).Get(ctx, 1, false); err != nil {
		t.Fatalf("after the failed rollback, Get(1) = %v; want the packed schema still in place", err)
	}
}
