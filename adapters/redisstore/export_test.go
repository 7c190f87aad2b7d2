package redisstore

import "testing"

// SetAuditPage makes Snapshot read n entries at a time until the test ends, so a test
// can cross page boundaries with a few entries.
func SetAuditPage(t testing.TB, n int64) {
	old := auditPage
	auditPage = n
	t.Cleanup(func() { auditPage = old })
}
