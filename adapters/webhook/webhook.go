// Package webhook posts events to the webhook endpoint, signed as Standard Webhooks
// says (https://www.standardwebhooks.com), with the Standard Webhooks library.
package webhook

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
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
	url    string
	signer *standardwebhooks.Webhook
	client *http.Client
}

// NewSender returns a Sender posting to url, signing with secret ("whsec_" and the
// base64 of the key).
func NewSender(url, secret string) (*Sender, error) {
	signer, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return nil, fmt.Errorf("webhook secret: %w", err)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 32
	return &Sender{url: url, signer: signer, client: &http.Client{
		Transport: transport,
		// A redirect is an answer other than 2xx: the attempt failed. Following it
		// would send the signed event somewhere nobody configured.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}, nil
}

// Send posts body with the headers webhook-id (id), webhook-timestamp (at, in Unix
// seconds) and webhook-signature ("v1," and the base64 of the HMAC-SHA256 of
// id.timestamp.body), and returns the answer's status, with an error unless it is a
// 2xx. It gives up at ctx's deadline.
func (s *Sender) Send(ctx context.Context, id string, at time.Time, body []byte) (int, error) {
	signature, err := s.signer.Sign(id, at, body)
	if err != nil {
		return 0, fmt.Errorf("sign webhook %s: %w", id, err)
	}
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
		return resp.StatusCode, fmt.Errorf("webhook %s: endpoint answered %d", id, resp.StatusCode)
	}
	return resp.StatusCode, nil
}
