package httpapi

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/cristalhq/jwt/v4"
	"github.com/go-json-experiment/json"
	"github.com/labstack/echo/v4"

	"github.com/seckill/seckill/domain"
)

// Principal is the caller a valid token names.
type Principal struct {
	User  domain.UserID
	Admin bool
}

// mintClaims are the claims Mint signs: sub, role (admins only), iat and exp, the
// times in whole seconds.
type mintClaims struct {
	Subject   string `json:"sub"`
	Role      string `json:"role,omitempty"`
	IssuedAt  int64  `json:"iat"`
	ExpiresAt int64  `json:"exp"`
}

// claims are the claims Parse reads, decoded strictly (see UnmarshalJSON): encoding/json
// would match member names case-insensitively, so {"SUB": ...} would pass for the
// subject, and many JWT libraries accept an exp written as a JSON string. A time
// claim that is absent is the zero time (a present one is never: it is at or after
// 1970).
type claims struct {
	subject   string
	role      string
	expiresAt time.Time
	notBefore time.Time
}

// maxNumericDate is the last second of year 9999: a later date is no real expiry
// and would overflow time.Time's arithmetic.
const maxNumericDate = 253402300799

// UnmarshalJSON reads the payload of a token: member names exact and not repeated,
// sub and role strings, exp (required), nbf and iat JSON numbers between 0 and
// maxNumericDate, times read to the second. Other members are ignored, as JWT asks.
func (c *claims) UnmarshalJSON(b []byte) error {
	var w struct {
		Sub  *string  `json:"sub"`
		Role *string  `json:"role"`
		Exp  *float64 `json:"exp"`
		Nbf  *float64 `json:"nbf"`
		Iat  *float64 `json:"iat"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("claims: %w", err)
	}
	if w.Sub == nil {
		return errors.New("claims: sub is required")
	}
	if w.Exp == nil {
		return errors.New("claims: exp is required")
	}
	c.subject = *w.Sub
	if w.Role != nil {
		c.role = *w.Role
	}
	for _, d := range []struct {
		name string
		in   *float64
		out  *time.Time
	}{{"exp", w.Exp, &c.expiresAt}, {"nbf", w.Nbf, &c.notBefore}, {"iat", w.Iat, nil}} {
		if d.in == nil {
			continue
		}
		if *d.in < 0 || *d.in > maxNumericDate {
			return fmt.Errorf("claims: %s is out of range", d.name)
		}
		if d.out != nil {
			*d.out = time.Unix(int64(*d.in), 0)
		}
	}
	return nil
}

// valid says whether the claims hold at now: before exp, and at or after nbf when
// there is one (iat is not checked: a token issued "in the future" by a clock ahead
// of this one is still the secret holder's).
func (c *claims) valid(now time.Time) error {
	if !now.Before(c.expiresAt) {
		return errors.New("token expired")
	}
	if !c.notBefore.IsZero() && now.Before(c.notBefore) {
		return errors.New("token not valid yet")
	}
	return nil
}

const roleAdmin = "admin"

// Tokens mints and verifies HS256 bearer tokens. Verified tokens are remembered until
// they expire, so a user who presses grab again — the flood after a sell-out is
// mostly that — costs no signature check and no JSON decoding: the same token string
// can only carry the same, already verified, claims.
type Tokens struct {
	hs    *jwt.HSAlg // signs and verifies; nil for an empty secret, which signs nothing
	mu    sync.RWMutex
	known map[string]knownToken
}

// knownToken is a verified token's principal, shared by every request that presents
// it (never changed once made), and its expiry.
type knownToken struct {
	p   *Principal
	exp time.Time
}

// maxKnownTokens bounds the memory of verified tokens; past it the memory starts over.
const maxKnownTokens = 200_000

// NewTokens returns a token codec for secret.
func NewTokens(secret []byte) *Tokens {
	// NewSignerHS refuses only an empty key; Mint and Parse then refuse every token.
	hs, _ := jwt.NewSignerHS(jwt.HS256, secret)
	return &Tokens{hs: hs, known: make(map[string]knownToken)}
}

// Mint returns a signed token for user that expires after ttl; admin adds role "admin".
func (t *Tokens) Mint(user domain.UserID, admin bool, ttl time.Duration) (string, error) {
	if user <= 0 {
		return "", domain.Invalid("user", "must be a positive integer")
	}
	if t.hs == nil {
		return "", errNoSecret
	}
	now := time.Now()
	c := mintClaims{Subject: user.String(), IssuedAt: now.Unix(), ExpiresAt: now.Add(ttl).Unix()}
	if admin {
		c.Role = roleAdmin
	}
	tok, err := jwt.NewBuilder(t.hs).Build(c)
	if err != nil {
		return "", fmt.Errorf("sign token: %w", err)
	}
	return tok.String(), nil
}

// Parse verifies a token (signature, algorithm pinned to HS256, expiry required and a
// JSON number) and returns its principal. The subject must be a canonical positive
// decimal user id: digits only, no sign, no leading zero.
func (t *Tokens) Parse(token string) (Principal, error) {
	p, err := t.principal(token)
	if err != nil {
		return Principal{}, err
	}
	return *p, nil
}

// principal is Parse, returning the principal that every request presenting token
// shares.
func (t *Tokens) principal(token string) (*Principal, error) {
	t.mu.RLock()
	k, ok := t.known[token]
	t.mu.RUnlock()
	now := time.Now()
	if ok && now.Before(k.exp) {
		return k.p, nil
	}
	if t.hs == nil {
		return nil, errNoSecret
	}
	// The signature (HS256 only) is checked before the claims are read.
	tok, err := jwt.Parse([]byte(token), t.hs)
	if err != nil {
		return nil, fmt.Errorf("parse token: %w", err)
	}
	var c claims
	if err := c.UnmarshalJSON(tok.Claims()); err != nil {
		return nil, fmt.Errorf("parse token: %w", err)
	}
	if err := c.valid(now); err != nil {
		return nil, fmt.Errorf("parse token: %w", err)
	}
	user, err := domain.ParseUserID(c.subject)
	if err != nil {
		return nil, fmt.Errorf("token subject: %w", err)
	}
	p := &Principal{User: user, Admin: c.role == roleAdmin}
	t.mu.Lock()
	if len(t.known) >= maxKnownTokens {
		clear(t.known)
	}
	t.known[token] = knownToken{p: p, exp: c.expiresAt}
	t.mu.Unlock()
	return p, nil
}

var (
	errNoSecret     = errors.New("no token secret")
	errUnauthorized = errors.New("missing, malformed, expired or forged bearer token")
	errForbidden    = errors.New("admin role required")
)

const principalKey = "principal"

// authenticate requires a valid bearer token and stores its Principal in the context.
// It reads the Authorization header as echo-jwt's middleware does by default: each
// value that starts with "Bearer " (in any case) and has more after it is a token, tried
// in order until one is valid, up to the first such value at or after the twentieth.
func authenticate(tokens *Tokens) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			for i, v := range c.Request().Header[echo.HeaderAuthorization] {
				if len(v) <= len(bearer) || !strings.EqualFold(v[:len(bearer)], bearer) {
					continue
				}
				if p, err := tokens.principal(v[len(bearer):]); err == nil {
					c.Set(principalKey, p)
					return next(c)
				}
				if i >= maxAuthorizations-1 {
					break
				}
			}
			return errUnauthorized
		}
	}
}

// bearer is the scheme of the Authorization header, and maxAuthorizations how many of
// its values authenticate reads at most (echo-jwt's limit).
const (
	bearer            = "Bearer "
	maxAuthorizations = 20
)

// requireAdmin lets only admins through; it runs after authenticate.
func requireAdmin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !principal(c).Admin {
			return errForbidden
		}
		return next(c)
	}
}

func principal(c echo.Context) Principal {
	if p, ok := c.Get(principalKey).(*Principal); ok {
		return *p
	}
	return Principal{}
}
