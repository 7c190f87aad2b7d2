package application

import (
	"context"
	"errors"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// QueueStats are what an admin reads of a voucher's waiting room: its figures of one
// moment, its window, and its shuffle once published.
type QueueStats struct {
	// Window is the voucher's queue window: the most passes outstanding at once.
	Window int
	// Early counts the users who joined before the start, Late those who joined from
	// then on.
	Early, Late int64
	// Admitted counts the users taken from the line so far (let in, or passed over as
	// holding an order already); Waiting those still in it.
	Admitted, Waiting int64
	// Outstanding counts the passes given and neither used nor expired.
	Outstanding int64
	// Commitment is the hex SHA-256 of the voucher's seed.
	Commitment string
	// Shuffle is the published shuffle (seed, entrants' count and digest, no
	// entrants), once it ran; nil before: the seed stays secret until then.
	Shuffle *domain.SeededShuffle
}

// Joined counts every user who joined the room.
func (s QueueStats) Joined() int64 { return s.Early + s.Late }

// GetQueueStats reads a waiting room's figures for an admin.
type GetQueueStats struct {
	vouchers *RoomSales
	room     ports.WaitingRoom
	shuffles ports.Shuffles
}

// NewGetQueueStats returns the use case.
func NewGetQueueStats(rooms *RoomSales, room ports.WaitingRoom, shuffles ports.Shuffles) *GetQueueStats {
	return &GetQueueStats{vouchers: rooms, room: room, shuffles: shuffles}
}

// Handle returns voucher id's waiting room's figures, or domain.ErrNotFound (no such
// voucher) or domain.ErrNoWaitingRoom (a voucher sold otherwise).
func (uc *GetQueueStats) Handle(ctx context.Context, id domain.VoucherID) (QueueStats, error) {
	v, err := uc.vouchers.Get(ctx, id)
	if err != nil {
		return QueueStats{}, err
	}
	if !v.OwnRoom() {
		return QueueStats{}, domain.ErrNoWaitingRoom
	}
	f, err := uc.room.Figures(ctx, id)
	if err != nil {
		return QueueStats{}, err
	}
	sh, err := publishedShuffle(ctx, uc.shuffles, id)
	if err != nil {
		return QueueStats{}, err
	}
	return QueueStats{
		Window: v.QueueWindow, Early: f.Early, Late: f.Late, Admitted: f.Admitted,
		Waiting: max(f.Early+f.Late-f.Admitted, 0), Outstanding: f.Outstanding,
		Commitment: v.Commitment(), Shuffle: sh,
	}, nil
}

// publishedShuffle returns voucher id's shuffle without its entrants, or nil before
// it ran.
func publishedShuffle(ctx context.Context, shuffles ports.Shuffles, id domain.VoucherID) (*domain.SeededShuffle, error) {
	sh, err := shuffles.Get(ctx, id, false)
	if errors.Is(err, domain.ErrNotFound) {
		return nil, nil //nolint:nilnil // not shuffled yet is no error
	}
	if err != nil {
		return nil, err
	}
	return &sh, nil
}
