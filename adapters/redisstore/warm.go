package redisstore

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// warmScript loads a voucher's sale state unless it already exists, and every time
// makes sure the stream and its consumer group exist, so a live group keeps its
// position. Its KEYS, ARGV and reply are documented at the top of warm.lua.
//
//go:embed warm.lua
var warmSrc string
var warmScript = newScript(warmSrc)

// Warm loads v's sale state only if it is absent, so a live counter is never reset:
// stock v.Stock and remaining v.Stock - v.Sold (never below 0), since the units the
// database's live orders hold are not on sale again. It reports what it found and did
// (ports.WarmOutcome). The keys expire at v.EndsAt plus the grace. With v.Sold above 0
// the state is loaded "restoring": grabs answer an error wrapping
// domain.ErrUnavailable until Audit.Restored, after the live orders' reservations are
// restored (Audit.Restore); a state still restoring makes Warm report
// ports.WarmRestoring again, so a caller that died midway is followed by one that
// finishes; a state there and whole whose terms are of another version than v's makes
// it report ports.WarmStale, changing nothing.
// The state holds v's admission and challenge, which never change: a state there
// without them (loaded by an older version) gets them, so its grabs pass the gates.
// Whether or not it loaded, it creates the voucher's stream and consumer group if they
// are missing, adds v.ID to the registry (Keys.Registry) and to the set of active
// vouchers the queue takes the streams to read from (Keys.Active); all are idempotent,
// so a repeated warm-up repairs a lost group and changes nothing else.
func (s *Stock) Warm(ctx context.Context, v domain.Voucher) (ports.WarmOutcome, error) {
	left := max(v.Stock-v.Sold, 0)
	// Live orders hold units: their reservations must be restored before grabs are
	// taken, so the state is loaded "restoring" until Audit.Restored.
	restoring := luaFlag(v.Sold > 0)
	loaded, err := warmScript.Run(ctx, s.client, s.keys.withCampaign(v.ID, s.keys.Meta(v.ID), s.keys.Stream(v.ID)),
		v.Stock, left, v.BeginsAt.UnixMilli(), v.EndsAt.UnixMilli(), v.PerUserLimit,
		v.EndsAt.Add(s.grace).UnixMilli(), s.group, luaFlag(v.Paused), restoring, v.Version,
		string(admissionOf(v)), string(challengeOf(v))).Int()
	if err != nil {
		return ports.WarmPresent, fmt.Errorf("warm stock: %w", err)
	}
	if err := s.register(ctx, v); err != nil {
		return ports.WarmPresent, fmt.Errorf("warm stock: %w", err)
	}
	switch {
	case loaded == 2, loaded == 1 && v.Sold > 0:
		return ports.WarmRestoring, nil
	case loaded == 1:
		return ports.WarmLoaded, nil
	case loaded == 3:
		return ports.WarmStale, nil
	}
	return ports.WarmPresent, nil
}

// register adds v to the registry and to the set of active vouchers, scored by the
// end of its sale. They are in other slots than v's keys, so they cannot join a
// script; they are written after the stream exists (the queue takes an id without a
// stream for an expired sale and forgets it). On a cluster the restock subscriber
// hears of v at once.
func (s *Stock) register(ctx context.Context, v domain.Voucher) error {
	pipe := s.client.Pipeline()
	pipe.SAdd(ctx, s.keys.Registry(), v.ID.String())
	pipe.ZAdd(ctx, s.keys.Active(), redis.Z{Score: float64(v.EndsAt.UnixMilli()), Member: v.ID.String()})
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("register voucher: %w", err)
	}
	if s.sharded {
		select {
		case s.warmed <- v.ID:
		default: // the subscriber is busy or absent: it looks at the active vouchers anyway
		}
	}
	return nil
}

// admissionOf is v's admission as the sale state holds it: first come when v leaves it
// empty (a voucher built before admission modes).
func admissionOf(v domain.Voucher) domain.Admission {
	if v.Admission == "" {
		return domain.AdmissionFirstCome
	}
	return v.Admission
}

// challengeOf is v's challenge as the sale state holds it: none when v leaves it empty.
func challengeOf(v domain.Voucher) domain.ChallengeKind {
	if v.Challenge == "" {
		return domain.ChallengeNone
	}
	return v.Challenge
}

// luaFlag is how the scripts take a yes or no: "1" or "0".
func luaFlag(p bool) string {
	if p {
		return "1"
	}
	return "0"
}

// pauseScript sets a voucher's paused flag, only if its sale state exists; its
// contract is at the top of pause.lua.
//
//go:embed pause.lua
var pauseSrc string
var pauseScript = newScript(pauseSrc)

// SetPaused pauses or resumes the grab path of a voucher. It reports false when the
// voucher has no sale state (Warm then loads the flag from the voucher).
func (s *Stock) SetPaused(ctx context.Context, id domain.VoucherID, paused bool) (bool, error) {
	set, err := pauseScript.Run(ctx, s.client, []string{s.keys.Meta(id)}, luaFlag(paused)).Int()
	if err != nil {
		return false, fmt.Errorf("pause sale: %w", err)
	}
	return set == 1, nil
}
