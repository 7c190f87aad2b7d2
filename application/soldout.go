package application

import (
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seckill/seckill/domain"
)

// soldOutFlags remembers, per instance, which vouchers Redis said were sold out, so
// the flood that follows a sell-out is answered without a Redis call. A flag is set
// only from Redis's own answer to a grab of one unit that brought no pass and no
// proof (so the voucher had none left, and has no gate a flag could answer before),
// and lapses after ttl, which bounds how long units that come back stay unseen here.
//
// Every grab reads the flags and few ever change them, so a change copies the map and
// a read takes no lock (a read-write mutex would have every grab on every core write
// to the same memory).
type soldOutFlags struct {
	ttl   time.Duration
	until atomic.Pointer[map[domain.VoucherID]time.Time]
	mu    sync.Mutex // serializes changes
}

func newSoldOutFlags(ttl time.Duration) *soldOutFlags {
	f := &soldOutFlags{ttl: ttl}
	f.until.Store(&map[domain.VoucherID]time.Time{})
	return f
}

// isSet reports whether id is flagged at now.
func (f *soldOutFlags) isSet(id domain.VoucherID, now time.Time) bool {
	if f.ttl <= 0 {
		return false
	}
	until, ok := (*f.until.Load())[id]
	return ok && now.Before(until)
}

// set flags id until now + ttl (or later, when it is flagged longer already: the grabs
// of one sell-out each set it, in no particular order).
func (f *soldOutFlags) set(id domain.VoucherID, now time.Time) {
	if f.ttl <= 0 {
		return
	}
	until := now.Add(f.ttl)
	f.mu.Lock()
	defer f.mu.Unlock()
	old := *f.until.Load()
	if u, ok := old[id]; ok && !u.Before(until) {
		return
	}
	m := maps.Clone(old)
	m[id] = until
	f.until.Store(&m)
}

// clear drops id's flag: units came back.
func (f *soldOutFlags) clear(id domain.VoucherID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := *f.until.Load()
	if _, ok := old[id]; !ok {
		return
	}
	m := maps.Clone(old)
	delete(m, id)
	f.until.Store(&m)
}
