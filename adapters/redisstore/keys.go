package redisstore

import "github.com/seckill/seckill/domain"

// DefaultPrefix starts every key when no prefix is given.
const DefaultPrefix = "seckill"

// Keys names seckill's Redis keys: here those of a voucher's sale state, its queue,
// its waiting room and the shared sets; beside their code the draw's (entries.go),
// the waitlist's (waitlist.go) and a user's index of orders (userindex.go). All keys
// of one voucher share the hash tag {v<id>} — {c<campaign>} for a campaign's voucher,
// shared with the campaign's own keys and its other vouchers' — so a script touching
// them runs on Redis Cluster too. The zero value uses DefaultPrefix.
type Keys struct {
	Prefix string
}

// Meta returns the key of the voucher's sale state: a hash of stock, remaining,
// begins and ends (Unix ms), limit (units per user) and expire (Unix ms), and the
// version of those terms, among others (ARCHITECTURE.md, "The data model").
func (k Keys) Meta(id domain.VoucherID) string { return k.key(id, "meta") }

// Buyers returns the key of the hash from user id to the order id the user holds.
func (k Keys) Buyers(id domain.VoucherID) string { return k.key(id, "buyers") }

// Orders returns the key of the hash from order id to the reservation's record,
// "user_id:qty:at_ms:expires_ms" (":expires_ms" absent when recorded without a
// deadline; codec.go).
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

// Stream returns the key of the stream of the voucher's reservations, one entry per
// reservation: field r "user_id:qty:at_ms:order_id", x the payment deadline (Unix ms)
// and tp the grab's traceparent when there are any (codec.go; entries of the earlier
// shape, fields order, voucher, user, qty and at, are read too).
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

// Challenges returns the key of the sorted set of the proof-of-work challenges issued
// to user for the voucher: member the challenge, score its expiry (Unix ms); at most
// ChallengesPerUser of them, the key expiring with the newest. It has the voucher's
// hash tag, so a challenge of another voucher (or user) is never found under it, and
// the check that spends it stays on the voucher's shard.
func (k Keys) Challenges(id domain.VoucherID, user domain.UserID) string {
	return k.key(id, "pow:"+user.String())
}

// Rates names the users' rate counters for one voucher: a hash from user id to the
// user's GCRA "theoretical arrival time" (Unix ms), in the voucher's slot so the
// reserve script checks and counts a batch's grabs in two commands. It expires with
// the sale state.
func (k Keys) Rates(id domain.VoucherID) string { return k.key(id, "rates") }

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

// Room returns the key of the hash of the waiting room's counters: closed (1 once
// early joining ended), installed (1 once the shuffled order is in place), early (how
// many were shuffled), late (how many joined later), admitted (how many were taken from
// the line: let in, or passed over as holding an order already),
// and the measure of the admission rate (rate, in users per 1000 s, over the last
// window; since and count, the window being measured).
func (k Keys) Room(id domain.VoucherID) string { return k.key(id, "room") }

// RoomEarly returns the key of the set of the users who joined the waiting room before
// the sale began (user ids, decimal), shuffled at the start.
func (k Keys) RoomEarly(id domain.VoucherID) string { return k.key(id, "room:early") }

// RoomPlaces returns the key of the hash from an early joiner's user id to its
// position in the shuffled order (1..early), written by the shuffle's install.
func (k Keys) RoomPlaces(id domain.VoucherID) string { return k.key(id, "room:places") }

// RoomLate returns the key of the hash from a late joiner's user id to its arrival
// number (1, 2, …): its position is early + that number.
func (k Keys) RoomLate(id domain.VoucherID) string { return k.key(id, "room:late") }

// RoomLine returns the key of the list of the shuffled early joiners still to be let
// in, front first.
func (k Keys) RoomLine(id domain.VoucherID) string { return k.key(id, "room:line") }

// RoomLateLine returns the key of the list of the late joiners still to be let in, in
// arrival order: the line goes on there once RoomLine is empty.
func (k Keys) RoomLateLine(id domain.VoucherID) string { return k.key(id, "room:lateline") }

// Campaign returns the key of a campaign's terms, beside its vouchers' sale states: a
// hash of cap (absent: none), limit (units per user across the campaign), variants
// (how many vouchers it holds), version and expire (Unix ms). It has the campaign's
// hash tag {c<id>}, which is its vouchers' too (key), so one script judges a grab
// against the voucher and the whole campaign on one Redis Cluster slot.
func (k Keys) Campaign(id domain.CampaignID) string {
	return k.prefix() + ":{c" + id.String() + "}:campaign"
}

// withCampaign returns keys followed by the key of voucher id's campaign's terms
// (Campaign) for a campaign's voucher, by keys alone for any other voucher: what a
// script that rebuilds or rewrites a voucher's units takes to delete the campaign's
// kept units taken (campaign_taken in prelude.lua).
func (k Keys) withCampaign(id domain.VoucherID, keys ...string) []string {
	if c, n := id.Campaign(); c != 0 && n > 0 {
		return append(keys, k.Campaign(c))
	}
	return keys
}

// CampaignHolders returns the key of the set of the users who may hold an order of
// one of the campaign's vouchers: every user the grab script or a restore records as
// a buyer of one of them is added, and none is removed, so a user not in it holds
// none, and the grab script looks for a user's orders across the campaign only when
// it finds the user in it. It expires with the campaign's terms.
func (k Keys) CampaignHolders(id domain.CampaignID) string {
	return k.prefix() + ":{c" + id.String() + "}:holders"
}

// key names a key of voucher id: under the voucher's own hash tag {v<id>}, or, for a
// campaign's voucher, under its campaign's {c<campaign>} followed by the voucher's id.
func (k Keys) key(id domain.VoucherID, name string) string {
	if c, _ := id.Campaign(); c != 0 {
		return k.prefix() + ":{c" + c.String() + "}:v" + id.String() + ":" + name
	}
	return k.prefix() + ":{v" + id.String() + "}:" + name
}

func (k Keys) prefix() string {
	if k.Prefix == "" {
		return DefaultPrefix
	}
	return k.Prefix
}
