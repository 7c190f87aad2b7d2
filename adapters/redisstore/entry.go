package redisstore

// maxOrderIDLen bounds an order id read from a stream entry. The application mints
// 26-character ULIDs; the bound leaves room for the ids tests and tools write, and
// keeps a hostile entry from carrying a megabyte into the database.
const maxOrderIDLen = 64

// plausibleOrderID reports whether s can be an order id: 1 to maxOrderIDLen
// printable ASCII characters, no space. A NUL, say, would make PostgreSQL refuse the
// whole batch the entry came in.
func plausibleOrderID(s string) bool {
	if s == "" || len(s) > maxOrderIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}
