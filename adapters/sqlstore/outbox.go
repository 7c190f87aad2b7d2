package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/uptrace/bun"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// outboxRow is a row of the webhook_outbox table: an event, and its delivery so far.
// Payload is the order, the voucher or the campaign of the event, JSON of its domain
// fields (eventPayload): the body is rendered from it when it is sent, by the one
// rendering the API answers with.
type outboxRow struct {
	bun.BaseModel `bun:"table:webhook_outbox,alias:w"`

	ID            string    `bun:"id,pk"`
	Type          string    `bun:"type"`
	CreatedAt     time.Time `bun:"created_at"`
	Payload       string    `bun:"payload"`
	Status        string    `bun:"status"`
	Attempts      int       `bun:"attempts"`
	NextAttemptAt time.Time `bun:"next_attempt_at,nullzero"`
	LastAttemptAt time.Time `bun:"last_attempt_at,nullzero"`
	LastStatus    int       `bun:"last_status"`
	LastError     string    `bun:"last_error"`
	DeliveredAt   time.Time `bun:"delivered_at,nullzero"`
	GivenUpAt     time.Time `bun:"given_up_at,nullzero"`
	Claim         string    `bun:"claim"`
	ClaimedUntil  time.Time `bun:"claimed_until,nullzero"`
}

// eventPayload is what payload holds: one of the three.
type eventPayload struct {
	Order   *domain.Order   `json:"order,omitempty"`
	Voucher *domain.Voucher `json:"voucher,omitempty"`
	// Campaign holds what the campaign's event tells: its id, title, window, per-user
	// limit, cap and sold, and its vouchers (Variants: ids Variant(1..Variants)).
	Campaign *domain.Campaign `json:"campaign,omitempty"`
}

// outbox collects the events of one transaction, to write them with one insert at
// its end (writeTx). A disabled outbox (webhooks off) collects nothing.
type outbox struct {
	enabled bool
	at      time.Time
	rows    []outboxRow
}

// newOutbox returns an outbox for the events of a transaction starting now; the
// events' time is now to the millisecond, the precision of the API's times.
func newOutbox(enabled bool) *outbox {
	return &outbox{enabled: enabled, at: now().Truncate(time.Millisecond)}
}

// order adds the event of order o having become its status.
func (b *outbox) order(o domain.Order) error {
	return b.add(domain.OrderEvent(o.Status), eventPayload{Order: &o})
}

// voucher adds event t of voucher v as it now is.
func (b *outbox) voucher(t domain.EventType, v domain.Voucher) error {
	return b.add(t, eventPayload{Voucher: &v})
}

// campaign adds event t of campaign c as it now is.
func (b *outbox) campaign(t domain.EventType, c domain.Campaign) error {
	return b.add(t, eventPayload{Campaign: &c})
}

func (b *outbox) add(t domain.EventType, p eventPayload) error {
	if !b.enabled {
		return nil
	}
	payload, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("encode event %s: %w", t, err)
	}
	b.rows = append(b.rows, outboxRow{
		ID: ulid.Make().String(), Type: string(t), CreatedAt: b.at, Payload: string(payload),
		Status: string(domain.DeliveryPending), NextAttemptAt: b.at,
	})
	return nil
}

// writeTx inserts the events collected, all in one statement; none writes nothing.
func (b *outbox) writeTx(ctx context.Context, tx bun.IDB) error {
	if len(b.rows) == 0 {
		return nil
	}
	// The columns an event is written with; the rest take their defaults (pending, no
	// attempt, no claim), which keeps the statement of a batch of 100 short.
	_, err := tx.NewInsert().Model(&b.rows).Column("id", "type", "created_at", "payload", "next_attempt_at").Exec(ctx)
	if err != nil {
		return fmt.Errorf("insert %d webhook events: %w", len(b.rows), err)
	}
	return nil
}

// delivery returns the row as the domain's delivery.
func (r outboxRow) delivery() (domain.Delivery, error) {
	var p eventPayload
	if err := json.Unmarshal([]byte(r.Payload), &p); err != nil {
		return domain.Delivery{}, fmt.Errorf("decode event %s: %w", r.ID, err)
	}
	return domain.Delivery{
		Event: domain.Event{ID: r.ID, Type: domain.EventType(r.Type), At: r.CreatedAt.UTC(), Order: p.Order, Voucher: p.Voucher,
			Campaign: p.Campaign},
		Status:        domain.DeliveryStatus(r.Status),
		Attempts:      r.Attempts,
		LastAttemptAt: utc(r.LastAttemptAt),
		NextAttemptAt: utc(r.NextAttemptAt),
		DeliveredAt:   utc(r.DeliveredAt),
		GivenUp:       !r.GivenUpAt.IsZero(),
		LastStatus:    r.LastStatus,
		LastError:     r.LastError,
	}, nil
}

// utc returns t in UTC, and the zero time as it is.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

var (
	_ ports.WebhookOutbox     = (*Webhooks)(nil)
	_ ports.WebhookDeliveries = (*Webhooks)(nil)
)

// Webhooks is the dispatcher's and the admin's side of the webhook outbox: the
// repositories write its rows (WithOutbox), Webhooks claims, records and lists them.
type Webhooks struct {
	db *bun.DB
}

// NewWebhooks returns the webhook outbox kept in db.
func NewWebhooks(db *bun.DB) *Webhooks {
	return &Webhooks{db: db}
}

// Claim takes up to limit deliveries due at now that no unexpired claim holds, soonest
// due first, under a claim of its own until now + lease, in one statement. On
// PostgreSQL the rows are picked FOR UPDATE SKIP LOCKED, so concurrent claims skip
// each other's rows instead of waiting, and a row another claim took meanwhile is
// re-checked and left out; on SQLite the statement runs alone (one writer). A limit
// below 1 is a *domain.ValidationError. While endpoint is disabled (a row of
// webhook_endpoints) it claims none and disables the deliveries still to be made.
func (s *Webhooks) Claim(ctx context.Context, endpoint string, at time.Time, limit int, lease time.Duration) ([]ports.ClaimedDelivery, error) {
	if limit < 1 {
		return nil, fmt.Errorf("claim webhook deliveries: %w", domain.Invalid("limit", "must be at least 1"))
	}
	at = at.UTC()
	disabled, err := s.db.NewSelect().Model((*endpointRow)(nil)).Where("url = ?", endpoint).Exists(ctx)
	if err != nil {
		return nil, fmt.Errorf("claim webhook deliveries: %w", Classify(err))
	}
	if disabled {
		return nil, s.disableDue(ctx, endpoint, at)
	}
	claim := ulid.Make().String()
	due := s.db.NewSelect().Model((*outboxRow)(nil)).
		Column("id").
		Where("next_attempt_at IS NOT NULL").
		Where("next_attempt_at <= ?", at).
		WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("claimed_until IS NULL").WhereOr("claimed_until <= ?", at)
		}).
		// Checked again in the statement: a 410 recorded since the check above stops it.
		Where("NOT EXISTS (?)", s.db.NewSelect().Model((*endpointRow)(nil)).Column("url").Where("e.url = ?", endpoint)).
		OrderExpr("next_attempt_at, id").
		Limit(int64(limit)).
		Apply(rowLock("UPDATE SKIP LOCKED"))
	var rows []outboxRow
	_, err = s.db.NewUpdate().Model((*outboxRow)(nil)).
		Set("claim = ?", claim).
		Set("claimed_until = ?", at.Add(lease)).
		Where("w.id IN (?)", due).
		Returning("*").
		Exec(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("claim webhook deliveries: %w", Classify(err))
	}
	out := make([]ports.ClaimedDelivery, 0, len(rows))
	for _, r := range rows {
		d, err := r.delivery()
		if err != nil {
			return nil, fmt.Errorf("claim webhook deliveries: %w", err)
		}
		out = append(out, ports.ClaimedDelivery{Delivery: d, Claim: claim, Endpoint: endpoint, CreatedAt: r.CreatedAt.UTC()})
	}
	return out, nil
}

// Record keeps the outcome of attempt a at the claimed delivery c and ends the claim,
// only while c's claim holds the row; it reports whether it did.
func (s *Webhooks) Record(ctx context.Context, c ports.ClaimedDelivery, a ports.WebhookAttempt) (bool, error) {
	var n int64
	// A 410 disables the endpoint with the delivery, in one transaction.
	err := s.db.RunInTx(ctx, ReadCommitted, func(ctx context.Context, tx bun.Tx) error {
		q := tx.NewUpdate().Model((*outboxRow)(nil)).
			Set("attempts = attempts + 1").
			Set("last_attempt_at = ?", a.At.UTC()).
			Set("last_status = ?", a.Status).
			Set("last_error = ?", a.Err).
			Set("claim = ''").
			Set("claimed_until = NULL").
			Where("w.id = ?", c.ID).
			Where("w.claim = ?", c.Claim)
		switch {
		case a.Disable:
			q = q.Set("status = ?", string(domain.DeliveryDisabled)).Set("next_attempt_at = NULL")
		case a.Err == "":
			q = q.Set("status = ?", string(domain.DeliveryDelivered)).Set("delivered_at = ?", a.At.UTC()).Set("next_attempt_at = NULL")
		case a.GiveUp:
			q = q.Set("status = ?", string(domain.DeliveryFailed)).Set("given_up_at = ?", a.At.UTC()).Set("next_attempt_at = NULL")
		default:
			q = q.Set("status = ?", string(domain.DeliveryFailed)).Set("next_attempt_at = ?", a.Next.UTC())
		}
		res, err := q.Exec(ctx)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil || n != 1 || !a.Disable {
			return err
		}
		row := endpointRow{URL: c.Endpoint, DisabledAt: a.At.UTC()}
		_, err = tx.NewInsert().Model(&row).On("CONFLICT (url) DO NOTHING").Exec(ctx)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("record webhook attempt %s: %w", c.ID, Classify(err))
	}
	return n == 1, nil
}

// endpointRow is a row of webhook_endpoints: an endpoint disabled by a 410.
type endpointRow struct {
	bun.BaseModel `bun:"table:webhook_endpoints,alias:e"`

	URL        string    `bun:"url,pk"`
	DisabledAt time.Time `bun:"disabled_at"`
}

// disableDue disables the deliveries still to be made that no unexpired claim holds
// at at, while endpoint is disabled. A claimed one is disabled at a Claim after its
// attempt. It holds endpoint's row meanwhile, so a Retry enabling the endpoint (which
// deletes that row first) comes wholly before or after: a retried delivery is never
// disabled by a check made before its retry.
func (s *Webhooks) disableDue(ctx context.Context, endpoint string, at time.Time) error {
	err := s.db.RunInTx(ctx, ReadCommitted, func(ctx context.Context, tx bun.Tx) error {
		var urls []string
		if err := tx.NewSelect().Model((*endpointRow)(nil)).Column("url").Where("url = ?", endpoint).
			Apply(rowLock("UPDATE")).Scan(ctx, &urls); err != nil {
			return err
		}
		if len(urls) == 0 {
			return nil
		}
		_, err := tx.NewUpdate().Model((*outboxRow)(nil)).
			Set("status = ?", string(domain.DeliveryDisabled)).
			Set("next_attempt_at = NULL").
			Where("next_attempt_at IS NOT NULL").
			WhereGroup(" AND ", func(q *bun.UpdateQuery) *bun.UpdateQuery {
				return q.Where("claimed_until IS NULL").WhereOr("claimed_until <= ?", at)
			}).
			Exec(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("disable webhook deliveries: %w", Classify(err))
	}
	return nil
}

// List returns one page of deliveries, newest (highest id: ids are ULIDs, so by time)
// first, read by the index on (status, id) when a status is asked for. A q.Limit
// below 1 returns a *domain.ValidationError.
func (s *Webhooks) List(ctx context.Context, q ports.DeliveryQuery) ([]domain.Delivery, error) {
	if q.Limit < 1 {
		return nil, fmt.Errorf("list webhook deliveries: %w", domain.Invalid("limit", "must be at least 1"))
	}
	var rows []outboxRow
	sel := s.db.NewSelect().Model(&rows)
	if q.Status != "" {
		sel = sel.Where("w.status = ?", string(q.Status))
	}
	if q.Before != "" {
		sel = sel.Where("w.id < ?", q.Before)
	}
	if err := sel.Order("w.id DESC").Limit(int64(q.Limit)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("list webhook deliveries: %w", Classify(err))
	}
	out := make([]domain.Delivery, 0, len(rows))
	for _, r := range rows {
		d, err := r.delivery()
		if err != nil {
			return nil, fmt.Errorf("list webhook deliveries: %w", err)
		}
		out = append(out, d)
	}
	return out, nil
}

// Backlog counts the deliveries neither delivered nor given up (next_attempt_at set),
// by the partial index of the rows due.
func (s *Webhooks) Backlog(ctx context.Context) (int, error) {
	n, err := s.db.NewSelect().Model((*outboxRow)(nil)).Where("w.next_attempt_at IS NOT NULL").Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("count webhook backlog: %w", Classify(err))
	}
	return int(n), nil
}

// WebhookRetention is how long a delivery that is over (delivered, or given up) is
// kept for the admin's list after its event: Purge forgets older ones.
const WebhookRetention = 7 * 24 * time.Hour

// Purge forgets the deliveries that are over (delivered or given up) whose event is
// older than cutoff, and returns how many. Ids are ULIDs, so the rows older than
// cutoff are a range of the primary key.
func (s *Webhooks) Purge(ctx context.Context, cutoff time.Time) (int, error) {
	bound := ulid.ULID{}
	if err := bound.SetTime(ulid.Timestamp(cutoff)); err != nil {
		return 0, fmt.Errorf("purge webhook deliveries: %w", err)
	}
	res, err := s.db.NewDelete().Model((*outboxRow)(nil)).
		Where("w.id < ?", bound.String()).
		Where("w.next_attempt_at IS NULL").
		Where("w.created_at < ?", cutoff.UTC()).
		Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("purge webhook deliveries: %w", Classify(err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("purge webhook deliveries: %w", err)
	}
	return int(n), nil
}

// Retry deletes endpoint's row of webhook_endpoints (enables it again), makes
// delivery id due at at (pending, not given up), and appends the audit entry of by, in one
// transaction. An unknown id is domain.ErrNotFound.
func (s *Webhooks) Retry(ctx context.Context, id, endpoint string, at time.Time, by domain.Author) (domain.Delivery, error) {
	var row outboxRow
	err := s.db.RunInTx(ctx, ReadCommitted, func(ctx context.Context, tx bun.Tx) error {
		// The endpoint's row first: a disableDue holding it ends before (see there).
		if _, err := tx.NewDelete().Model((*endpointRow)(nil)).Where("url = ?", endpoint).Exec(ctx); err != nil {
			return err
		}
		var before outboxRow
		if err := tx.NewSelect().Model(&before).Where("w.id = ?", id).Apply(rowLock("UPDATE")).Scan(ctx); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return domain.ErrNotFound
			}
			return err
		}
		if err := tx.NewUpdate().Model(&row).
			Set("status = ?", string(domain.DeliveryPending)).
			Set("next_attempt_at = ?", at.UTC()).
			Set("given_up_at = NULL").
			Where("w.id = ?", id).
			Returning("*").
			Scan(ctx); err != nil {
			return err
		}
		return appendTx(ctx, tx, domain.DeliveryAudit(by, id, domain.DeliveryStatus(before.Status)))
	})
	if err != nil {
		return domain.Delivery{}, fmt.Errorf("retry webhook delivery %s: %w", id, Classify(err))
	}
	return row.delivery()
}
