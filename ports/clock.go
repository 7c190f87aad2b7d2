package ports

import (
	"time"
)

// Clock tells the application's time; the grab path judges sale windows by it.
type Clock interface {
	Now() time.Time
}
