package main

import (
	"go.uber.org/zap"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/ports"
)

// The waiting rooms and the draws.

// joinQueue counts the users who join a waiting room, early or late.
func joinQueue(room ports.WaitingRoom, gate *application.BuyerGate, m *metrics) *application.JoinQueue {
	uc := application.NewJoinQueue(room, gate)
	uc.Observe(m.joined)
	return uc
}

// admitQueues runs the waiting rooms, the shuffle's lease held in this worker's name.
func admitQueues(rooms *application.RoomSales, room ports.WaitingRoom, shuffles ports.Shuffles, leases ports.Leases,
	clock ports.Clock, queue *redisstore.Queue, m *metrics, log *zap.Logger) *application.AdmitQueues {
	return application.NewAdmitQueues(rooms, room, shuffles, leases, clock,
		application.RoomOptions{Holder: queue.Consumer()}, m.roomObserver(log))
}

// drawRunner runs the draws (campaigns' too, read through rooms) on the instance
// holding their lease (named by its consumer name), a batch per Redis call, each draw
// carried out counted in the metrics.
func drawRunner(draws ports.Draws, entries ports.Entries, leases ports.Leases, ids ports.OrderIDs, clock ports.Clock,
	rooms *application.RoomSales, queue *redisstore.Queue, cfg Config, m *metrics) *application.RunDraws {
	return application.NewRunDraws(draws, entries, leases, ids, clock, rooms, queue.Consumer(),
		application.DrawOptions{Batch: cfg.DrawBatch, Lease: cfg.DrawLease},
		application.DrawObserver{Drawn: m.drawn})
}
