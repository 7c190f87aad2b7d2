package main

import (
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/turnstile"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/ports"
)

// challenge is the ports.Challenge SECKILL_CHALLENGE picks: proof of work kept in
// Redis (the default), or Cloudflare Turnstile.
func challenge(cfg Config, client redis.UniversalClient, clock *redisstore.Clock) ports.Challenge {
	if cfg.Challenge == "turnstile" {
		return turnstile.New(turnstile.Options{Secret: cfg.TurnstileSecret, SiteKey: cfg.TurnstileSiteKey, URL: cfg.TurnstileURL})
	}
	return redisstore.NewProofOfWork(client, stockOptions(cfg.Common), clock)
}

// issueChallenge counts every challenge issued.
func issueChallenge(rooms *application.RoomSales, challenge ports.Challenge, clock ports.Clock, m *metrics) *application.IssueChallenge {
	uc := application.NewIssueChallenge(rooms, challenge, clock)
	uc.Observe(m.challenge)
	return uc
}

// verifyProof counts every proof verified or refused.
func verifyProof(challenge ports.Challenge, m *metrics) *application.VerifyProof {
	uc := application.NewVerifyProof(challenge)
	uc.Observe(m.challenge)
	return uc
}
