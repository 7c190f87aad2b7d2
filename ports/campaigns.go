package ports

import (
	"context"

	"github.com/seckill/seckill/domain"
)

// Campaigns stores campaigns. A campaign's vouchers are stored by Vouchers.Create
// (a voucher with a CampaignID becomes the campaign's next variant, under the
// campaign's lock). Every admin change of a campaign is written with its audit entry
// (domain.CampaignAudit) in one transaction, as a voucher's is.
type Campaigns interface {
	// Create stores c, with the audit entry of its creation by by, and sets c.ID and
	// c.CreatedAt (c.Variants and c.Sold start at 0). With a receipt (nil: none) it
	// keeps the receipt's answer in the same transaction, or stores nothing and
	// returns ErrClaimLost when the claim no longer holds the key.
	Create(ctx context.Context, c *domain.Campaign, by domain.Author, r *Receipt[domain.Campaign]) error
	// Get returns one campaign, with its Sold and Variants as stored now, or
	// domain.ErrNotFound.
	Get(ctx context.Context, id domain.CampaignID) (domain.Campaign, error)
	// List returns one page of campaigns, newest (highest id) first: at most q.Limit
	// of those before q.Before (0: from the newest).
	List(ctx context.Context, q CampaignQuery) ([]domain.Campaign, error)
	// Update changes campaign id as u says, in one transaction that holds the
	// campaign's lock throughout, and returns the campaign as it now is, or
	// domain.ErrNotFound. An error from u.Change or u.Commit is returned as it is and
	// stores nothing; so does ErrClaimLost. A cap below the units the campaign's live
	// orders hold returns domain.ErrNotEnoughUnits and stores nothing.
	Update(ctx context.Context, id domain.CampaignID, u CampaignUpdate) (domain.Campaign, error)
}

// CampaignQuery selects a page of campaigns.
type CampaignQuery struct {
	// Before, when not 0, keeps only campaigns whose id is below it (the keyset
	// cursor).
	Before domain.CampaignID
	// Limit is the most campaigns returned; it is at least 1.
	Limit int
}

// CampaignUpdate is one admin change of a campaign, as Campaigns.Update runs it: read
// the campaign under its lock, Change it, write it with its audit entry (Action by
// By), run Commit, keep the Receipt's answer, commit.
type CampaignUpdate struct {
	Action domain.AuditAction
	By     domain.Author
	// Change returns the campaign as the change leaves it, given it as stored; one
	// returned equal to the one given changes nothing (no entry either).
	Change func(domain.Campaign) (domain.Campaign, error)
	// Commit, when set, runs after the campaign and its entry are written, before the
	// commit, with the campaign before and after: what lies outside the database and
	// must change with it or not at all.
	Commit func(ctx context.Context, before, after domain.Campaign) error
	// Receipt, when set, keeps the request's answer in the same transaction.
	Receipt *Receipt[domain.Campaign]
}

// CampaignStock holds a campaign's side of its vouchers' sale state (its cap, its
// per-user limit, how many vouchers it has), next to the vouchers' own (Stock), so a
// grab of any of them is judged against the campaign in the same atomic step: the
// units taken under the cap are those its vouchers' states hold taken (stock minus
// remaining, summed), and a user's units those of the reservations it holds of them.
// Only the stock strategies that keep it sell a campaign's vouchers.
type CampaignStock interface {
	// WarmCampaign loads the campaign's terms — cap, per-user limit, the number of
	// its vouchers and c.Version — unless the stock holds them at c.Version or a
	// later one, never lowering the number of vouchers. A grab of a campaign's
	// voucher answers domain.ErrNotFound, as one without sale state, while they are
	// absent.
	WarmCampaign(ctx context.Context, c domain.Campaign) error
	// EditCampaign carries c's terms into the stock whatever version it holds, for a
	// caller that holds the campaign's lock (Campaigns.Update's Commit). It returns
	// domain.ErrNotEnoughUnits, changing nothing, when c's cap is below the units its
	// vouchers' states hold taken. A campaign without its terms in the stock changes
	// nothing (WarmCampaign loads them).
	EditCampaign(ctx context.Context, c domain.Campaign) error
}
