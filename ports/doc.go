// Package ports declares what the use cases need from the outside world. The core owns
// these interfaces; adapters implement them.
//
// One file per aggregate: the sale state and its repairs (stock.go), vouchers
// (vouchers.go), orders (orders.go), the reservation outbox (queue.go), the audit log
// (audit.go), idempotency (idempotency.go), what wakes the event streams (events.go),
// the clock (clock.go), leases (lease.go), webhooks (webhooks.go), the deny list
// (deny.go), the challenge (challenge.go), the waiting room (room.go), the draw
// (draw.go) and the waitlist (waitlist.go). ARCHITECTURE.md lists each interface.
package ports
