package main

import (
	"errors"
	"fmt"
	"net/url"
)

// checkChallenge validates the challenge settings: Turnstile needs its secret and
// site key, and a siteverify URL that is an absolute http or https URL. The secret is
// never quoted back.
func (c *Config) checkChallenge() error {
	if c.Challenge != "turnstile" {
		return nil
	}
	if c.TurnstileSecret == "" {
		return errors.New("SECKILL_TURNSTILE_SECRET (--turnstile-secret): required with SECKILL_CHALLENGE=turnstile")
	}
	if c.TurnstileSiteKey == "" {
		return errors.New("SECKILL_TURNSTILE_SITEKEY (--turnstile-sitekey): required with SECKILL_CHALLENGE=turnstile")
	}
	u, err := url.Parse(c.TurnstileURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("SECKILL_TURNSTILE_URL (--turnstile-url): %q is not an http or https URL", c.TurnstileURL)
	}
	return nil
}
