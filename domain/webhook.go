package domain

import "time"

// EventType names what happened, as a webhook's "type" says it.
type EventType string

// The types of the events sent to the webhook endpoint.
const (
	EventOrderAwaitingPayment EventType = "order.awaiting_payment"
	EventOrderPaid            EventType = "order.paid"
	EventOrderCancelled       EventType = "order.cancelled"
	EventOrderExpired         EventType = "order.expired"
	EventOrderFailed          EventType = "order.failed"
	EventVoucherSoldOut       EventType = "voucher.sold_out"
	EventVoucherUpdated       EventType = "voucher.updated"
	EventCampaignSoldOut      EventType = "campaign.sold_out"
	EventCampaignUpdated      EventType = "campaign.updated"
)

// OrderEvent returns the type of the event of an order that became status s:
// "order." and the status.
func OrderEvent(s OrderStatus) EventType {
	return EventType("order." + string(s))
}

// Event is one change told to the webhook endpoint: an order that changed status
// (Order set), a voucher sold out or changed (Voucher set) or a campaign sold out
// or changed (Campaign set), as it was at At.
type Event struct {
	// ID is the event's webhook-id: the same on every attempt to deliver it.
	ID      string
	Type    EventType
	At      time.Time
	Order   *Order
	Voucher *Voucher
	// Campaign is set for a campaign sold out (its cap reached) or changed.
	Campaign *Campaign
}

// DeliveryStatus is where the delivery of an event stands.
type DeliveryStatus string

// The statuses of a delivery.
const (
	// DeliveryPending: not yet tried, or due again because an admin retried it.
	DeliveryPending DeliveryStatus = "pending"
	// DeliveryFailed: its last attempt failed; it is tried again, or was given up.
	DeliveryFailed DeliveryStatus = "failed"
	// DeliveryDelivered: the endpoint took it (a 2xx answer).
	DeliveryDelivered DeliveryStatus = "delivered"
	// DeliveryDisabled: its endpoint answered 410 Gone (to it or to another delivery),
	// so it is not tried again unless an admin retries it.
	DeliveryDisabled DeliveryStatus = "disabled"
)

// Valid reports whether s is one of the statuses above.
func (s DeliveryStatus) Valid() bool {
	return s == DeliveryPending || s == DeliveryFailed || s == DeliveryDelivered || s == DeliveryDisabled
}

// Delivery is an event and what became of its delivery so far.
type Delivery struct {
	Event
	Status DeliveryStatus
	// Attempts counts the attempts made.
	Attempts int
	// LastAttemptAt is when the last attempt was made; zero before the first.
	LastAttemptAt time.Time
	// NextAttemptAt is when it is due next; zero once delivered, given up or disabled.
	NextAttemptAt time.Time
	// DeliveredAt is when the endpoint took it; zero until then.
	DeliveredAt time.Time
	// GivenUp says that it failed for too long to be tried again.
	GivenUp bool
	// LastStatus is the HTTP status of the last answer; 0 when there was none (no
	// attempt yet, or no answer: a timeout, a refused connection).
	LastStatus int
	// LastError says why the last attempt failed; empty when it did not.
	LastError string
}

// DeliveryAudit returns the entry of an admin's retry of webhook delivery id by
// author: Before holds its id and the status it had, After its id and pending. At
// and ID are the log's to set.
func DeliveryAudit(by Author, id string, before DeliveryStatus) AuditEntry {
	return AuditEntry{Actor: by.Actor, Action: AuditWebhookRetry, RequestID: by.RequestID,
		Before: mustJSON(map[string]any{"delivery_id": id, "status": before}),
		After:  mustJSON(map[string]any{"delivery_id": id, "status": DeliveryPending})}
}
