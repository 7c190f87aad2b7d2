package ports

import (
	"context"
	"time"
)

// Leases lets one instance at a time run a job: a lease names its holder and until when
// it holds it.
type Leases interface {
	// Acquire takes lease name for holder until ttl from now, or renews it when holder
	// holds it already; it reports false, taking nothing, while another holder's lease
	// runs. It returns the state the last holder saved.
	Acquire(ctx context.Context, name, holder string, ttl time.Duration) (string, bool, error)
	// Release ends holder's lease name now, so another holder may take it at once.
	Release(ctx context.Context, name, holder string) error
}
