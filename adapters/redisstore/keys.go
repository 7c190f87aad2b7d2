package redisstore

import "github.com/seckill/seckill/domain"

// DefaultPrefix starts every key when no prefix is given.
const DefaultPrefix = "seckill"

// Keys names the Redis keys of a voucher. All keys of one voucher share the hash tag
// {v<id>}, so a script touching them runs on Redis Cluster too. The zero value uses
// DefaultPrefix.
type Keys struct {
	Prefix string
}

// Meta returns the key of the voucher's sale state: a hash of stock, remaining,
// begins and ends (Unix ms), limit (units per user) and expire (Unix ms), and the
// version of those terms, among others (ARCHITECTURE.md, "The data model").
func (k Keys) Meta(id domain.VoucherID) string { return k.key(id, "meta") }

// Buyers returns the key of the hash from user id to the order id the user holds.
func (k Keys) Buyers(id domain.VoucherID) string { return k.key(id, "buyers") }

// Orders returns the key of the hash from order id to "user_id:qty:at_ms".
func (k Keys) Orders(id domain.VoucherID) string { return k.key(id, "orders") }

// Released returns the key of the set of the voucher's order ids whose units were
// released (their orders closed: cancelled, expired or failed). A closed order never
// holds units again, so no restore may record it again, however old the list of live
// orders it restores from. It expires with the sale state.
func (k Keys) Released(id domain.VoucherID) string { return k.key(id, "released") }

// Passes returns the key of the sorted set of a waiting room's outstanding passes:
// member the user id (decimal), score the pass's expiry (Unix ms). The waiting room
// adds a member when it admits a user; a grab that carries the pass is taken only
// while its user's member holds that expiry, and the reservation removes it in the same
// step, so a pass admits one order.
func (k Keys) Passes(id domain.VoucherID) string { return k.key(id, "passes") }

// Stream returns the key of the stream of the voucher's reservations, one entry with
// fields order, voucher, user, qty and at (Unix ms) per reservation.
func (k Keys) Stream(id domain.VoucherID) string { return k.key(id, "stream") }

// Dead returns the key of the voucher's dead-letter stream: the entries of Stream that
// could not be fulfilled, with their original fields plus reason, stream, entry_id and
// deliveries.
func (k Keys) Dead(id domain.VoucherID) string { return k.key(id, "dead") }

// Restock returns the name of the Pub/Sub channel on which a release that gave units
// back (or a recount that raised the remaining units, or an edit that put units on
// sale) announces the voucher's id
// (decimal), so every instance can drop its sold-out flag, on one Redis server. It is a
// channel, not a key: it has no hash tag and holds nothing.
func (k Keys) Restock() string { return k.prefix() + ":restock" }

// Denials returns the name of the Pub/Sub channel on which a change of the deny list is
// announced, on one server and on Redis Cluster alike: classic PUBLISH is broadcast to
// every node of a cluster, and changes of the list are rare. It is a channel, not a
// key.
func (k Keys) Denials() string { return k.prefix() + ":denials" }

// VoucherRestock returns the name of the sharded Pub/Sub channel (SPUBLISH) on which
// the restocks of one voucher are announced on Redis Cluster: it has the voucher's
// hash tag, so the announcement stays on the voucher's shard.
func (k Keys) VoucherRestock(id domain.VoucherID) string { return k.key(id, "restock") }

// Changes returns the name of the Pub/Sub channel on which the changes of one voucher
// and its orders are announced (Changes.Publish): "<voucher>" or "<voucher>:<order>".
// It has the voucher's hash tag, so on Redis Cluster the sharded channel stays on the
// voucher's shard; on one server it is a classic channel of the same name.
func (k Keys) Changes(id domain.VoucherID) string { return k.key(id, "changes") }

// Ticket returns the key of a stream ticket, named by the hex SHA-256 of the ticket
// (the key never holds the ticket itself): a string holding the user id, expiring
// with the ticket. It lives in its own slot.
func (k Keys) Ticket(digest string) string { return k.prefix() + ":ticket:" + digest }

// Challenge returns the key of a proof-of-work challenge issued for the voucher: a
// string holding the id of the user it was issued to, expiring with the challenge. It
// has the voucher's hash tag, so a challenge of another voucher is never found under
// it, and the check that spends it stays on the voucher's shard.
func (k Keys) Challenge(id domain.VoucherID, challenge string) string {
	return k.key(id, "pow:"+challenge)
}

// Rate names a user's rate counter for one voucher (a GCRA "theoretical arrival
// time"), in the voucher's slot so the reserve script can check it.
func (k Keys) Rate(id domain.VoucherID, user domain.UserID) string {
	return k.key(id, "rate:"+user.String())
}

// Registry returns the key of the set of voucher ids warmed (decimal) whose keys have
// not expired yet, in which reservations are looked up. It has no hash tag: it lives
// in its own slot, so no script touches it together with a voucher's keys. The queue
// removes the vouchers whose keys expired, a few at a time (Queue.Trim).
func (k Keys) Registry() string { return k.prefix() + ":vouchers" }

// Active returns the key of the sorted set of the vouchers whose reservations the
// queue reads: member the voucher id (decimal), score the end of its sale (Unix ms).
// Warm adds a voucher; the queue removes it once its sale has ended and every
// reservation in its stream has been delivered and acknowledged. Like the registry it
// has no hash tag.
func (k Keys) Active() string { return k.prefix() + ":active" }

func (k Keys) key(id domain.VoucherID, name string) string {
	return k.prefix() + ":{v" + id.String() + "}:" + name
}

func (k Keys) prefix() string {
	if k.Prefix == "" {
		return DefaultPrefix
	}
	return k.Prefix
}
