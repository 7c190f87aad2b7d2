package system_test

import (
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/seckill/seckill/adapters/memory"
	"github.com/seckill/seckill/adapters/system"
	"github.com/seckill/seckill/domain"
)

// TestULIDsTellTheirClocksTime: an id's time is the clock's it was given (the sale's
// clock in the service), not the host's: two instances, one on time and one whose
// clock reads a minute earlier, mint ids that sort by their clocks' readings.
func TestULIDsTellTheirClocksTime(t *testing.T) {
	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	ids := system.NewULIDs(memory.NewClock(at))
	id := ids.NewOrderID()
	if got := ulidTime(t, id); !got.Equal(at) {
		t.Fatalf("id %s minted at %s tells %s", id, at, got)
	}
	earlier := system.NewULIDs(memory.NewClock(at.Add(-time.Minute))).NewOrderID()
	if earlier >= id {
		t.Fatalf("an id minted a minute earlier by its clock, %s, sorts after %s", earlier, id)
	}
}

// TestULIDsOnlyGrow: within one process each id sorts after the one before, in the
// same millisecond and when the clock steps back (the sale's clock measured again).
func TestULIDsOnlyGrow(t *testing.T) {
	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	clock := memory.NewClock(at)
	ids := system.NewULIDs(clock)
	last := ids.NewOrderID()
	for i := range 1000 {
		switch i {
		case 300:
			clock.Set(at.Add(-5 * time.Millisecond))
		case 600:
			clock.Set(at.Add(time.Millisecond))
		}
		id := ids.NewOrderID()
		if id <= last {
			t.Fatalf("id %d, %s, does not sort after the one before, %s", i, id, last)
		}
		last = id
	}
	if got := ulidTime(t, last); !got.Equal(at.Add(time.Millisecond)) {
		t.Fatalf("the last id tells %s, want the clock's %s once it passed the earlier ids' millisecond", got, at.Add(time.Millisecond))
	}
}

func ulidTime(t *testing.T, id domain.OrderID) time.Time {
	t.Helper()
	u, err := ulid.ParseStrict(string(id))
	if err != nil {
		t.Fatal(err)
	}
	return ulid.Time(u.Time()).UTC()
}
