package application

import (
	"sync"
	"time"

	"github.com/seckill/seckill/domain"
)

// soldOutFlags remembers, per instance, which vouchers Redis said were sold out, so
// the flood that follows a sell-out is answered without a Redis call. A flag is set
// only from Redis's own answer to a grab of one unit (so the voucher had none left),
// and lapses after ttl, which bounds how long units that come back stay unseen here.
type soldOutFlags struct {
	ttl   time.Duration
	mu    sync.RWMutex
	until map[domain.VoucherID]time.Time
}

func newSoldOutFlags(ttl time.Duration) *soldOutFlags {
	return &soldOutFlags{ttl: ttl, until: map[domain.VoucherID]time.Time{}}
}

// isSet reports whether id is flagged at now.
func (f *soldOutFlags) isSet(id domain.VoucherID, now time.Time) bool {
	if f.ttl <= 0 {
		return false
	}
	f.mu.RLock()
	until, ok := f.until[id]
	f.mu.RUnlock()
	return ok && now.Before(until)
}

// set flags id until now + ttl.
func (f *soldOutFlags) set(id domain.VoucherID, now time.Time) {
	if f.ttl <= 0 {
		return
	}
	f.mu.Lock()
	f.until[id] = now.Add(f.ttl)
	f.mu.Unlock()
}

// clear drops id's flag: units came back.
func (f *soldOutFlags) clear(id domain.VoucherID) {
	f.mu.Lock()
	delete(f.until, id)
	f.mu.Unlock()
}
