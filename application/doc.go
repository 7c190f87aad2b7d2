// Package application holds seckill's use cases. Each is a type with one verb, Handle
// (Run for the two loops below), the entry point its callers use; it depends only on
// the domain and on the interfaces in ports, so the same use case runs on Redis and
// PostgreSQL, on the embedded stand-ins, or on the in-memory fakes its tests use.
//
// Handle takes what its caller asks:
//
//   - a command struct for what a buyer, an admin or the heal asks for: GrabVoucherCmd,
//     JoinQueueCmd, EnterDrawCmd, WaitlistCmd, VerifyProofCmd, IssueChallengeCmd,
//     IssueStreamTicketCmd, RedeemStreamTicketCmd, CreateVoucherCmd, EditVoucherCmd,
//     PauseSaleCmd, OrderChangeCmd, DenyUserCmd, AllowUserCmd, RecoverCmd,
//     ReconcileCmd, RetryDeliveryCmd. OrderChangeCmd is PayOrder's and CancelOrder's;
//     WaitlistCmd is JoinWaitlist's, LeaveWaitlist's and WaitlistPosition's (a read
//     of the place the other two change);
//   - for a read of a page, a query struct (ListVouchersQuery, ListAuditQuery,
//     ListDeniedQuery, VoucherOrdersQuery, ListDeliveriesQuery; ListOrders the
//     Caller and a ListOrdersQuery);
//   - for a read of one thing, the ids it reads, as they are: GetVoucher,
//     GetVoucherStats, GetDraw and QueueEntrants a voucher's, QueueStatus a voucher's
//     and a user's, GetOrder the Caller and an order's;
//   - for a step of the fulfillment, what it works on (FulfillOrder the deliveries,
//     Compensate the order);
//   - nothing but the context for one step of a workers' loop (AdmitQueues, RunDraws,
//     ExpireOrders, ReleaseClosed, WarmVouchers).
//
// Two are loops, not steps: Worker and DeliverWebhooks Run until their context ends
// (and Worker.Drain persists what a queue in memory still holds at shutdown). A few
// carry a second entry point for the caller that needs it (GrabVoucher.Restocked,
// GetVoucher.Refresh, RecoverVoucher.Start, Reconcile.Heal, Reconcile.Round with a
// RoundCmd, AdmitQueues.Shuffle); an Observe method, or the Observer struct its
// constructor takes (WorkerObserver, RoomObserver, DrawObserver, WebhookObserver),
// sets a use case's hooks before it serves.
//
// Every buyer's request of a voucher — a grab, a waiting room's join, a draw's entry,
// a waitlist's join — passes BuyerGate first (Check, with a BuyerCommand), the one
// place that judges who may buy. BuyerGate, DeniedUsers (the instance's copy of the
// deny list) and PersistedOrders (a grab's wait for its order's commit) are parts the
// use cases share, not use cases.
package application
