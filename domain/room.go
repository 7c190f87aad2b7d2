package domain

import "errors"

// ErrNoWaitingRoom means the voucher is not sold through a waiting room (its
// admission is first_come or draw), so it has no queue to join or read.
var ErrNoWaitingRoom = errors.New("voucher has no waiting room")
