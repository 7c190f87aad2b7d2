package application

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// DeniedUsers is this instance's copy of the deny list, which the grab path reads
// with no round trip to any store: a map swapped whole on each reload, read through an
// atomic pointer, so a grab never waits for a lock.
type DeniedUsers struct {
	list ports.DenyList
	// reloading keeps one reload at a time, so a read older than another's never
	// replaces it.
	reloading sync.Mutex
	users     atomic.Pointer[map[domain.UserID]struct{}]
}

// NewDeniedUsers returns an empty set that Reload fills from list.
func NewDeniedUsers(list ports.DenyList) *DeniedUsers {
	d := &DeniedUsers{list: list}
	d.users.Store(&map[domain.UserID]struct{}{})
	return d
}

// Denied reports whether user was listed at the last reload.
func (d *DeniedUsers) Denied(user domain.UserID) bool {
	_, ok := (*d.users.Load())[user]
	return ok
}

// Len returns how many users the set holds.
func (d *DeniedUsers) Len() int {
	return len(*d.users.Load())
}

// Reload reads the whole list again; on an error the set is left as it was.
func (d *DeniedUsers) Reload(ctx context.Context) error {
	d.reloading.Lock()
	defer d.reloading.Unlock()
	users, err := d.list.Users(ctx)
	if err != nil {
		return fmt.Errorf("reload the deny list: %w", err)
	}
	m := make(map[domain.UserID]struct{}, len(users))
	for _, u := range users {
		m[u] = struct{}{}
	}
	d.users.Store(&m)
	return nil
}

// denyWrites is what the use cases that change the deny list share: the list they
// write, where they announce a change, and this instance's set, reloaded at once.
type denyWrites struct {
	list    ports.DenyList
	changes ports.DenyChanges
	local   *DeniedUsers
}

// announce reloads this instance's set and tells the others to reload theirs.
func (w denyWrites) announce(ctx context.Context) error {
	err := w.changes.AnnounceDenials(ctx)
	if rerr := w.local.Reload(ctx); rerr != nil && err == nil {
		err = rerr
	}
	return err
}

// DenyUser puts a user on the deny list, or changes its reason, and takes it off every
// waitlist it joined: the stock that hands units to a waitlist's users cannot see the
// deny list (see Waitlist).
type DenyUser struct {
	denyWrites
	waitlist ports.Waitlist
}

// NewDenyUser returns the use case: it writes to list, announces the change on
// changes, reloads local, this instance's set, at once, and drops the user from
// waitlist (nil: none).
func NewDenyUser(list ports.DenyList, changes ports.DenyChanges, local *DeniedUsers, waitlist ports.Waitlist) *DenyUser {
	return &DenyUser{denyWrites: denyWrites{list: list, changes: changes, local: local}, waitlist: waitlist}
}

// DenyUserCmd asks to list User with Reason.
type DenyUserCmd struct {
	Denial  domain.Denial
	By      domain.Author
	Receipt *ports.Receipt[domain.Denial]
}

// DenyListChange is the outcome of a change of the deny list. Unannounced, when not
// nil, says why the other instances were not told at once: the change stands, and
// they see it at their next periodic reload. Undropped, when not nil, says why a
// denied user could not be taken off the waitlists it joined: the denial stands, and
// the user may still be handed a unit from one until an admin denies it again.
type DenyListChange struct {
	Denial      domain.Denial
	Unannounced error
	Undropped   error
}

// Handle validates and stores the denial. It returns a *domain.ValidationError,
// ports.ErrClaimLost or an error wrapping domain.ErrUnavailable.
func (uc *DenyUser) Handle(ctx context.Context, cmd DenyUserCmd) (DenyListChange, error) {
	if err := domain.ValidateDenial(cmd.Denial); err != nil {
		return DenyListChange{}, err
	}
	d, err := uc.list.Deny(ctx, cmd.Denial, cmd.By, cmd.Receipt)
	if err != nil {
		return DenyListChange{}, fmt.Errorf("deny user %s: %w", cmd.Denial.User, err)
	}
	change := DenyListChange{Denial: d, Unannounced: uc.announce(ctx)}
	// After the announcement: an instance that still let the user join meanwhile has
	// reloaded its list by the time the user is dropped, but for an announcement that
	// did not arrive (then its periodic reload closes the window).
	if uc.waitlist != nil {
		if err := uc.waitlist.Drop(ctx, d.User); err != nil {
			change.Undropped = fmt.Errorf("take user %s off its waitlists: %w", d.User, err)
		}
	}
	return change, nil
}

// AllowUser takes a user off the deny list.
type AllowUser struct{ denyWrites }

// NewAllowUser returns the use case, which writes to list, announces on changes and
// reloads local at once.
func NewAllowUser(list ports.DenyList, changes ports.DenyChanges, local *DeniedUsers) *AllowUser {
	return &AllowUser{denyWrites{list: list, changes: changes, local: local}}
}

// AllowUserCmd asks to take User off the deny list.
type AllowUserCmd struct {
	User    domain.UserID
	By      domain.Author
	Receipt *ports.Receipt[domain.UserID]
}

// Handle takes the user off the list; a user not listed is no error. It returns a
// *domain.ValidationError, ports.ErrClaimLost or an error wrapping
// domain.ErrUnavailable; Unannounced as DenyUser's.
func (uc *AllowUser) Handle(ctx context.Context, cmd AllowUserCmd) (DenyListChange, error) {
	if cmd.User <= 0 {
		return DenyListChange{}, domain.Invalid("user_id", "must be a positive integer")
	}
	if err := uc.list.Allow(ctx, cmd.User, cmd.By, cmd.Receipt); err != nil {
		return DenyListChange{}, fmt.Errorf("allow user %s: %w", cmd.User, err)
	}
	return DenyListChange{Denial: domain.Denial{User: cmd.User}, Unannounced: uc.announce(ctx)}, nil
}

// ListDenied reads a page of the deny list, by user id.
type ListDenied struct {
	list ports.DenyList
}

// NewListDenied returns the use case.
func NewListDenied(list ports.DenyList) *ListDenied {
	return &ListDenied{list: list}
}

// DenialPage is a page of the deny list.
type DenialPage struct {
	Denials []domain.Denial
	// NextCursor asks for the next page; empty on the last page.
	NextCursor string
}

// ListDeniedQuery asks for a page of the deny list.
type ListDeniedQuery struct {
	// Limit is the page size, 1 to MaxPageLimit; 0 means DefaultPageLimit.
	Limit int
	// Cursor is NextCursor of the previous page; empty for the first page.
	Cursor string
}

// Handle returns the page of the query. A limit out of range or a cursor not of this
// list returns a *domain.ValidationError.
func (uc *ListDenied) Handle(ctx context.Context, q ListDeniedQuery) (DenialPage, error) {
	limit, err := pageLimit(q.Limit)
	if err != nil {
		return DenialPage{}, err
	}
	var after domain.UserID
	if q.Cursor != "" {
		if after, err = decodeDenialCursor(q.Cursor); err != nil {
			return DenialPage{}, err
		}
	}
	ds, err := uc.list.List(ctx, after, limit+1)
	if err != nil {
		return DenialPage{}, fmt.Errorf("list the deny list: %w", err)
	}
	page := DenialPage{Denials: ds}
	if len(ds) > limit {
		page.Denials = ds[:limit]
		page.NextCursor = encodeDenialCursor(ds[limit-1].User)
	}
	return page, nil
}
