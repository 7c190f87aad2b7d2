package domain

import (
	"encoding/json"
	"time"
)

// AuditAction names the kind of admin change an audit entry records.
type AuditAction string

// The actions of the audit log.
const (
	AuditVoucherCreate   AuditAction = "voucher.create"
	AuditVoucherUpdate   AuditAction = "voucher.update"
	AuditVoucherPause    AuditAction = "voucher.pause"
	AuditVoucherResume   AuditAction = "voucher.resume"
	AuditReconcileRepair AuditAction = "reconcile.repair"
	AuditDenylistAdd     AuditAction = "denylist.add"
	AuditDenylistRemove  AuditAction = "denylist.remove"
	AuditWebhookRetry    AuditAction = "webhook.retry"
	AuditCampaignCreate  AuditAction = "campaign.create"
	AuditCampaignUpdate  AuditAction = "campaign.update"
)

// Author is who makes an admin change, and under which request: what the change's
// audit entry names. Actor is the admin's user id for a change made through the API
// (a string), or a name of the program that made it ("reconcile", "cli:<os user>");
// RequestID is the request id the client saw (empty outside a request).
type Author struct {
	Actor     string
	RequestID string
}

// AuditEntry is one admin change as the audit log keeps it: appended in the same
// transaction as the change, never changed afterwards.
type AuditEntry struct {
	// ID orders the entries: a later entry has a higher id.
	ID     int64
	At     time.Time
	Actor  string
	Action AuditAction
	// VoucherID is the voucher changed; 0 for a change of no voucher.
	VoucherID VoucherID
	// CampaignID is the campaign changed; 0 for a change of no campaign.
	CampaignID CampaignID
	RequestID  string
	// Before and After are JSON objects of the values the change replaced and the
	// values it left; nil where there are none (a creation has no Before).
	Before, After json.RawMessage
}

// VoucherAudit returns the entry of a change of a voucher by author: Before and After
// hold the fields (title, stock, begins_at, ends_at, per_user_limit, paused) that
// differ between before and after, each side's value; for a new voucher (before nil)
// After holds every field and Before is nil. A campaign's voucher names its campaign
// too (CampaignID): a change of a variant changes the drop. At and ID are the log's
// to set.
func VoucherAudit(action AuditAction, by Author, before *Voucher, after Voucher) AuditEntry {
	campaign, _ := after.ID.Campaign()
	e := AuditEntry{Actor: by.Actor, Action: action, VoucherID: after.ID, CampaignID: campaign, RequestID: by.RequestID}
	var b map[string]any
	if before != nil {
		b = voucherFields(*before)
	}
	e.Before, e.After = auditDiff(b, voucherFields(after))
	return e
}

// CampaignAudit is VoucherAudit for a change of a campaign: the fields title,
// begins_at, ends_at, per_user_limit and cap (null when none), and at creation its
// challenge and waiting room (its settings and the seed's commitment).
func CampaignAudit(action AuditAction, by Author, before *Campaign, after Campaign) AuditEntry {
	e := AuditEntry{Actor: by.Actor, Action: action, CampaignID: after.ID, RequestID: by.RequestID}
	var b map[string]any
	if before != nil {
		b = campaignFields(*before)
	}
	e.Before, e.After = auditDiff(b, campaignFields(after))
	return e
}

// auditDiff returns the JSON of an entry's before and after: every field of after
// for a creation (before nil, no Before), else the fields that differ, each side's.
func auditDiff(before, after map[string]any) (json.RawMessage, json.RawMessage) {
	if before == nil {
		return nil, mustJSON(after)
	}
	for k, v := range after {
		if before[k] == v {
			delete(after, k)
			delete(before, k)
		}
	}
	return mustJSON(before), mustJSON(after)
}

// campaignFields are the fields of c an admin sets, by their names in the API.
func campaignFields(c Campaign) map[string]any {
	f := map[string]any{
		"title":          c.Title,
		"begins_at":      c.BeginsAt.UTC().Format(StampLayout),
		"ends_at":        c.EndsAt.UTC().Format(StampLayout),
		"per_user_limit": c.PerUserLimit,
		"cap":            nil,
	}
	if c.Cap != nil {
		f["cap"] = *c.Cap
	}
	if c.Challenge == ChallengePow {
		f["challenge"], f["pow_difficulty"] = string(c.Challenge), c.PowDifficulty
	}
	if c.Admission == AdmissionWaitingRoom {
		f["admission"], f["commitment"] = string(c.Admission), c.Room().Commitment()
		f["queue_window"], f["queue_opens_at"] = c.QueueWindow, c.QueueOpensAt.UTC().Format(StampLayout)
	}
	return f
}

// voucherFields are the fields of v an admin sets, by their names in the API, as
// comparable values.
func voucherFields(v Voucher) map[string]any {
	f := map[string]any{
		"title":          v.Title,
		"stock":          v.Stock,
		"begins_at":      v.BeginsAt.UTC().Format(StampLayout),
		"ends_at":        v.EndsAt.UTC().Format(StampLayout),
		"per_user_limit": v.PerUserLimit,
		"paused":         v.Paused,
	}
	// The admission settings, set once at creation, where they differ from first
	// come with no challenge; the seed never (only its commitment).
	if v.Admission != "" && v.Admission != AdmissionFirstCome {
		f["admission"], f["commitment"] = string(v.Admission), v.Commitment()
	}
	if v.Challenge == ChallengePow {
		f["challenge"], f["pow_difficulty"] = string(v.Challenge), v.PowDifficulty
	}
	if v.QueueWindow > 0 {
		f["queue_window"], f["queue_opens_at"] = v.QueueWindow, v.QueueOpensAt.UTC().Format(StampLayout)
	}
	if !v.EntriesOpenAt.IsZero() {
		f["entries_open_at"] = v.EntriesOpenAt.UTC().Format(StampLayout)
	}
	return f
}

// mustJSON encodes m, which holds strings, integers and booleans only, so encoding
// cannot fail.
func mustJSON(m map[string]any) json.RawMessage {
	b, err := json.Marshal(m)
	if err != nil {
		panic("encode audit values: " + err.Error())
	}
	return b
}

// StampLayout is how the service writes a time (the v1.3 contract, "Time"): RFC 3339
// in UTC with exactly three fractional digits, as in an audit entry's before and after.
const StampLayout = "2006-01-02T15:04:05.000Z07:00"
