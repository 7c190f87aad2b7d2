// Package webhook posts events to the webhook endpoint, signed as Standard Webhooks
// says (https://www.standardwebhooks.com), with the Standard Webhooks library.
package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/seckill/seckill/ports"
)

var _ ports.WebhookSender = (*Sender)(nil)

// maxDrained is the most of an answer's body read (and thrown away) so its connection
// can be reused; a longer one closes the connection instead.
const maxDrained = 64 << 10

// Sender is a ports.WebhookSender posting to one URL over its own HTTP client, so a
// slow endpoint holds none of the connections anything else uses.
type Sender struct {
	url     string
	signers []*standardwebhooks.Webhook
	client  *http.Client
}

// NewSender returns a Sender posting to url, signing with each of secrets ("whsec_"
// and the base64 of a key): several while a secret is rotated, so a receiver that
// knows either the old or the new one verifies every delivery.
func NewSender(url string, secrets ...string) (*Sender, error) {
	if len(secrets) == 0 {
		return nil, errors.New("webhook secret: none given")
	}
	signers := make([]*standardwebhooks.Webhook, len(secrets))
	for i, secret := range secrets {
		signer, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			return nil, fmt.Errorf("webhook secret %d: %w", i+1, err)
		}
		signers[i] = signer
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 32
	return &Sender{url: url, signers: signers, client: &http.Client{
		Transport: transport,
		// A redirect is an answer other than 2xx: the attempt failed. Following it
		// would send the signed event somewhere nobody configured.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}, nil
}

// Send posts body with the headers webhook-id (id), webhook-timestamp (at, in Unix
// seconds) and webhook-signature ("v1," and the base64 of the HMAC-SHA256 of
// id.timestamp.body, one for each secret, separated by spaces), and returns the
// answer's status, with an error unless it is a 2xx. It gives up at ctx's deadline.
func (s *Sender) Send(ctx context.Context, id string, at time.Time, body []byte) (int, error) {
	signatures := make([]string, len(s.signers))
	for i, signer := range s.signers {
		sig, err := signer.Sign(id, at, body)
		if err != nil {
			return 0, fmt.Errorf("sign webhook %s: %w", id, err)
		}
		signatures[i] = sig
	}
	signature := strings.Join(signatures, " ")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("webhook %s: %w", id, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(standardwebhooks.HeaderWebhookID, id)
	req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(at.Unix(), 10))
	req.Header.Set(standardwebhooks.HeaderWebhookSignature, signature)
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("post webhook %s: %w", id, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrained))
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		if wait, ok := retryAfter(resp); ok {
			return resp.StatusCode, fmt.Errorf("webhook %s: %w", id, &ports.ReceiverBusyError{Status: resp.StatusCode, RetryAfter: wait})
		}
		return resp.StatusCode, fmt.Errorf("webhook %s: endpoint answered %d", id, resp.StatusCode)
	}
	return resp.StatusCode, nil
}

// retryAfter reads the Retry-After of a 429 or 503: delay-seconds, or an HTTP date
// (RFC 9110), the wait from now; false for another status or no readable header.
func retryAfter(resp *http.Response) (time.Duration, bool) {
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
		return 0, false
	}
	v := strings.TrimSpace(resp.Header.Get("Retry-After"))
	if secs, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(secs) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(time.Until(at), 0), true
	}
	return 0, false
}
