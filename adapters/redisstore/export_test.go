package redisstore

import (
	"sync"
	"testing"
)

// SetAuditPage makes Snapshot read n entries at a time until the test ends, so a test
// can cross page boundaries with a few entries.
func SetAuditPage(t testing.TB, n int64) {
	old := auditPage
	auditPage = n
	t.Cleanup(func() { auditPage = old })
}

// SetActivePage makes the queue read the set of active vouchers n members at a time
// until the test ends, so a test can cross page boundaries with a few vouchers.
func SetActivePage(t testing.TB, n int64) {
	old := activePage
	activePage = n
	t.Cleanup(func() { activePage = old })
}

// SetStreamsPerRead makes one XREADGROUP of the queue read at most n streams until the
// test ends, so a test can split a read into several commands with a few vouchers.
func SetStreamsPerRead(t testing.TB, n int) {
	old := streamsPerRead
	streamsPerRead = n
	t.Cleanup(func() { streamsPerRead = old })
}

// HoldEmbedded keeps e from running any command, as a long command would, until the
// returned function is called (or the test ends).
func HoldEmbedded(t testing.TB, e *Embedded) (release func()) {
	e.srv.Lock()
	var once sync.Once
	release = func() { once.Do(e.srv.Unlock) }
	t.Cleanup(release)
	return release
}

// SetNow makes w's scripts judge by now (Unix ms) instead of the sale's clock.
func (w *WaitingRoom) SetNow(now func() int64) { w.now = now }

// DecodeEntry reads the fields of a stream entry of voucher as the workers do, so a
// test can check what a grab appended without knowing the entry's shape.
var DecodeEntry = decodeFields
