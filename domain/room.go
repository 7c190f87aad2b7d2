package domain

import (
	"errors"
	"fmt"
)

// ErrNoWaitingRoom means the sale has no waiting room of its own (its admission is
// first_come or draw, or it is a campaign's voucher, sold through its campaign's
// room), so it has no queue to join or read.
var ErrNoWaitingRoom = errors.New("voucher has no waiting room")

// ErrNotJoined means the user asked for its place in a waiting room it never joined.
// It is a domain.ErrNotFound (the contract's 404 not_found), told apart so that the
// answer can say so.
var ErrNotJoined = fmt.Errorf("%w: user has not joined this waiting room", ErrNotFound)
