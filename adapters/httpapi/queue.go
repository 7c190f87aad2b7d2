package httpapi

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
)

// eventQueue is the kind of the waiting room's events.
const eventQueue = "queue"

// queueEventsRoute and campaignQueueEventsRoute are the waiting rooms' event
// streams: a voucher's, and a campaign's.
const (
	queueEventsRoute         = "/api/v1/vouchers/:id/queue/events"
	campaignQueueEventsRoute = campaignsPath + "/:id/queue/events"
)

// roomID reads the waiting room a route names: a voucher's (/api/v1/vouchers/{id}/…),
// or a campaign's, by its room id (/api/v1/campaigns/{id}/…, domain.CampaignID.Room).
func roomID(c echo.Context) (domain.VoucherID, error) {
	if strings.HasPrefix(c.Path(), campaignsPath+"/") {
		id, err := domain.ParseCampaignID(c.Param("id"))
		if err != nil {
			return 0, err
		}
		return id.Room(), nil
	}
	id, err := domain.ParseVoucherID(c.Param("id"))
	if err != nil {
		return 0, err
	}
	if _, room := id.CampaignRoom(); room {
		return 0, domain.ErrNotFound // a campaign's room id: its room is the campaign's path's
	}
	return id, nil
}

// QueueEvery is how often a waiting room's stream reads its user's place again: a
// change (a position learnt, a pass given) reaches the client within it.
const QueueEvery = 500 * time.Millisecond

// QueueJSON is a user's place in a waiting room, as GET …/queue answers it and its
// stream sends it. Fields not known yet are null: position and ahead before the
// shuffle, the seed, entrants and their digest until it ran, the pass until the user
// is admitted (and once it is used or expired), the estimated wait without a measured
// admission rate (or once admitted or sold out).
type QueueJSON struct {
	Position             *int64  `json:"position"`
	Ahead                *int64  `json:"ahead"`
	Admitted             bool    `json:"admitted"`
	SoldOut              bool    `json:"sold_out"`
	Pass                 *string `json:"pass"`
	PassExpiresAt        *stamp  `json:"pass_expires_at"`
	Commitment           string  `json:"commitment"`
	Seed                 *string `json:"seed"`
	Entrants             *int    `json:"entrants"`
	EntrantsDigest       *string `json:"entrants_digest"`
	EstimatedWaitSeconds *int64  `json:"estimated_wait_seconds"`
}

// toQueueJSON renders a user's place.
func toQueueJSON(v application.QueueView) QueueJSON {
	q := QueueJSON{Admitted: v.Admitted, SoldOut: v.SoldOut, Commitment: v.Commitment}
	if v.Position > 0 {
		q.Position, q.Ahead = &v.Position, &v.Ahead
	}
	if v.Pass != "" {
		q.Pass, q.PassExpiresAt = &v.Pass, optionalStamp(v.PassExpires)
	}
	q.Seed, q.Entrants, q.EntrantsDigest = shuffleJSON(v.Shuffle)
	if v.WaitKnown {
		secs := int64(v.Wait / time.Second)
		q.EstimatedWaitSeconds = &secs
	}
	return q
}

// shuffleJSON renders a published shuffle: its seed (hex), how many entrants it
// shuffled and their digest; all nil before it ran (sh nil).
func shuffleJSON(sh *domain.SeededShuffle) (seed *string, entrants *int, digest *string) {
	if sh == nil {
		return nil, nil, nil
	}
	hexSeed := hex.EncodeToString(sh.Seed[:])
	return &hexSeed, &sh.Count, &sh.Digest
}

// QueueStatsJSON is a waiting room's figures, as GET …/queue/stats answers them to
// an admin. The seed, entrants and their digest are null until the shuffle ran.
type QueueStatsJSON struct {
	Window            int     `json:"window"`
	Joined            int64   `json:"joined"`
	JoinedEarly       int64   `json:"joined_early"`
	JoinedLate        int64   `json:"joined_late"`
	Admitted          int64   `json:"admitted"`
	Waiting           int64   `json:"waiting"`
	PassesOutstanding int64   `json:"passes_outstanding"`
	Commitment        string  `json:"commitment"`
	Seed              *string `json:"seed"`
	Entrants          *int    `json:"entrants"`
	EntrantsDigest    *string `json:"entrants_digest"`
}

// queueStats answers GET /api/v1/vouchers/{id}/queue/stats (an admin): the waiting
// room's figures.
func (h handlers) queueStats(c echo.Context) error {
	id, err := roomID(c)
	if err != nil {
		return err
	}
	s, err := h.uc.GetQueueStats.Handle(c.Request().Context(), id)
	if err != nil {
		return err
	}
	q := QueueStatsJSON{Window: s.Window, Joined: s.Joined(), JoinedEarly: s.Early, JoinedLate: s.Late, Admitted: s.Admitted,
		Waiting: s.Waiting, PassesOutstanding: s.Outstanding, Commitment: s.Commitment}
	q.Seed, q.Entrants, q.EntrantsDigest = shuffleJSON(s.Shuffle)
	return c.JSON(http.StatusOK, q)
}

// joinQueue answers POST /api/v1/vouchers/{id}/queue: 202 with the caller's place,
// the same place when it joined already.
func (h handlers) joinQueue(c echo.Context) error {
	id, err := roomID(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	user := principal(c).User
	if err := h.uc.JoinQueue.Handle(ctx, application.JoinQueueCmd{VoucherID: id, UserID: user, Proof: c.Request().Header.Get(PowHeader)}); err != nil {
		return h.withChallenge(c, id, user, err)
	}
	v, err := h.uc.QueueStatus.Handle(ctx, id, user)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, toQueueJSON(v))
}

// queueStatus answers GET /api/v1/vouchers/{id}/queue: the caller's place, or 404
// when it never joined.
func (h handlers) queueStatus(c echo.Context) error {
	id, err := roomID(c)
	if err != nil {
		return err
	}
	v, err := h.uc.QueueStatus.Handle(c.Request().Context(), id, principal(c).User)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toQueueJSON(v))
}

// queueEvents answers GET /api/v1/vouchers/{id}/queue/events: the caller's place at
// once, then again whenever it changes (read every QueueEvery), until the client
// leaves. A caller who never joined is answered 404 before the stream starts.
func (h handlers) queueEvents(c echo.Context) error {
	id, err := roomID(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	user := principal(c).User
	v, err := h.uc.QueueStatus.Handle(ctx, id, user)
	if err != nil {
		return err
	}
	last, err := json.Marshal(toQueueJSON(v))
	if err != nil {
		return fmt.Errorf("encode queue: %w", err)
	}
	w, open := h.streams.startWith(c, contentEvent(eventQueue, last))
	if !open {
		return nil
	}
	return pump(ctx, h.streams, w, feed[struct{}]{every: QueueEvery,
		read: func(ctx context.Context, _ struct{}) (event, bool) {
			v, err := h.uc.QueueStatus.Handle(ctx, id, user)
			if err != nil {
				return event{}, false // tried again at the next read
			}
			b, err := json.Marshal(toQueueJSON(v))
			if err != nil || bytes.Equal(b, last) {
				return event{}, false
			}
			last = b
			return contentEvent(eventQueue, b), true
		}})
}

// queueEntrants answers GET /api/v1/vouchers/{id}/queue/entrants: the entrants of the
// room's shuffle as a draw's are answered (writeEntrants), the bytes whose SHA-256 is
// the published entrants_digest. Before the shuffle: 404 not_found.
func (h handlers) queueEntrants(c echo.Context) error {
	id, err := roomID(c)
	if err != nil {
		return err
	}
	sh, err := h.uc.QueueEntrants.Handle(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return writeEntrants(c, sh.Entrants)
}

// queueRoutes adds the waiting rooms' routes through route, a voucher's and a
// campaign's alike: join and read behind auth, the stream behind byTicket (a ticket or
// the Authorization header), the shuffle's entrants behind public (anyone may check
// the shuffle), the room's figures behind auth and an admin; and a campaign's
// challenge, which its room's join asks a proof of (a voucher's is challengeRoute).
func queueRoutes(route func(method, path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc), h handlers,
	auth, byTicket echo.MiddlewareFunc, public []echo.MiddlewareFunc) {
	for _, base := range []string{"/api/v1/vouchers/:id", campaignsPath + "/:id"} {
		route(http.MethodPost, base+"/queue", h.joinQueue, auth)
		route(http.MethodGet, base+"/queue", h.queueStatus, auth)
		route(http.MethodGet, base+"/queue/events", h.queueEvents, byTicket)
		route(http.MethodGet, base+"/queue/entrants", h.queueEntrants, public...)
		route(http.MethodGet, base+"/queue/stats", h.queueStats, auth, requireAdmin)
	}
	route(http.MethodGet, campaignsPath+"/:id/challenge", h.issueChallenge, auth)
}
