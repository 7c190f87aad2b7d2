package memory

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// DenyList is an in-memory ports.DenyList. It keeps no audit log and no receipts.
type DenyList struct {
	mu      sync.Mutex
	denials map[domain.UserID]domain.Denial
	// Announced counts AnnounceDenials calls: DenyList is also a ports.DenyChanges.
	Announced int
}

var (
	_ ports.DenyList    = (*DenyList)(nil)
	_ ports.DenyChanges = (*DenyList)(nil)
)

// NewDenyList returns an empty list.
func NewDenyList() *DenyList {
	return &DenyList{denials: map[domain.UserID]domain.Denial{}}
}

// Deny lists d.User, or changes its reason.
func (l *DenyList) Deny(_ context.Context, d domain.Denial, _ domain.Author, _ *ports.Receipt[domain.Denial]) (domain.Denial, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.denials[d.User]; ok && old.Reason == d.Reason {
		return old, nil
	}
	d.At = time.Now().UTC().Truncate(time.Millisecond)
	l.denials[d.User] = d
	return d, nil
}

// Allow takes user off the list.
func (l *DenyList) Allow(_ context.Context, user domain.UserID, _ domain.Author, _ *ports.Receipt[domain.UserID]) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.denials, user)
	return nil
}

// List returns up to limit denials of users above after, by user id.
func (l *DenyList) List(_ context.Context, after domain.UserID, limit int) ([]domain.Denial, error) {
	if limit < 1 {
		return nil, domain.Invalid("limit", "must be at least 1")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []domain.Denial
	for u, d := range l.denials {
		if u > after {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b domain.Denial) int { return cmp.Compare(a.User, b.User) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Users returns every listed user.
func (l *DenyList) Users(_ context.Context) ([]domain.UserID, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]domain.UserID, 0, len(l.denials))
	for u := range l.denials {
		out = append(out, u)
	}
	return out, nil
}

// AnnounceDenials counts the announcement.
func (l *DenyList) AnnounceDenials(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.Announced++
	return nil
}
