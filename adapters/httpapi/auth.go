package httpapi

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/golang-jwt/jwt/v5"
	"github.com/labstack/echo/v4"

	"github.com/seckill/seckill/domain"
)

// Principal is the caller a valid token names.
type Principal struct {
	User  domain.UserID
	Admin bool
}

// mintClaims are the claims Mint signs: the registered ones (sub, iat, exp) and role.
type mintClaims struct {
	Role string `json:"role,omitempty"`
	jwt.RegisteredClaims
}

// claims are the claims Parse reads, decoded strictly (see UnmarshalJSON): jwt's own
// types accept an exp written as a JSON string, and encoding/json matches member
// names case-insensitively, so {"SUB": ...} would pass for the subject. A time claim
// that is absent is the zero time (a present one is never: it is at or after 1970).
type claims struct {
	subject   string
	role      string
	expiresAt time.Time
	notBefore time.Time
	issuedAt  time.Time
}

// maxNumericDate is the last second of year 9999: a later date is no real expiry
// and would overflow time.Time's arithmetic.
const maxNumericDate = 253402300799

// UnmarshalJSON reads the payload of a token: member names exact and not repeated,
// sub and role strings, exp (required), nbf and iat JSON numbers between 0 and
// maxNumericDate. Other members are ignored, as JWT asks.
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
	}{{"exp", w.Exp, &c.expiresAt}, {"nbf", w.Nbf, &c.notBefore}, {"iat", w.Iat, &c.issuedAt}} {
		if d.in == nil {
			continue
		}
		if *d.in < 0 || *d.in > maxNumericDate {
			return fmt.Errorf("claims: %s is out of range", d.name)
		}
		// As jwt.NewNumericDate makes it: to the precision jwt compares times at.
		sec, frac := math.Modf(*d.in)
		*d.out = time.Unix(int64(sec), int64(frac*1e9)).Truncate(jwt.TimePrecision)
	}
	return nil
}

// The jwt.Claims methods the parser's validator reads.

func (c *claims) GetExpirationTime() (*jwt.NumericDate, error) { return numericDate(c.expiresAt), nil }
func (c *claims) GetNotBefore() (*jwt.NumericDate, error)      { return numericDate(c.notBefore), nil }
func (c *claims) GetIssuedAt() (*jwt.NumericDate, error)       { return numericDate(c.issuedAt), nil }
func (c *claims) GetIssuer() (string, error)                   { return "", nil }
func (c *claims) GetSubject() (string, error)                  { return c.subject, nil }
func (c *claims) GetAudience() (jwt.ClaimStrings, error)       { return nil, nil }

// numericDate is t as jwt's validator reads it: nil when absent.
func numericDate(t time.Time) *jwt.NumericDate {
	if t.IsZero() {
		return nil
	}
	return &jwt.NumericDate{Time: t}
}

const roleAdmin = "admin"

// Tokens mints and verifies HS256 bearer tokens. Verified tokens are remembered until
// they expire, so a user who presses grab again — the flood after a sell-out is
// mostly that — costs no signature check and no JSON decoding: the same token string
// can only carry the same, already verified, claims.
type Tokens struct {
	secret []byte
	parser *jwt.Parser
	mu     sync.RWMutex
	known  map[string]knownToken
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
	t := &Tokens{
		secret: secret,
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
			jwt.WithExpirationRequired(),
		),
		known: make(map[string]knownToken),
	}
	return t
}

// Mint returns a signed token for user that expires after ttl; admin adds role "admin".
func (t *Tokens) Mint(user domain.UserID, admin bool, ttl time.Duration) (string, error) {
	if user <= 0 {
		return "", domain.Invalid("user", "must be a positive integer")
	}
	c := mintClaims{RegisteredClaims: jwt.RegisteredClaims{
		Subject:   user.String(),
		IssuedAt:  jwt.NewNumericDate(time.Now()),
		ExpiresAt: jwt.NewNumericDate(time.Now().Add(ttl)),
	}}
	if admin {
		c.Role = roleAdmin
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(t.secret)
	if err != nil {
		return "", fmt.Errorf("sign token: %w", err)
	}
	return s, nil
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
	var c claims
	if _, err := t.parser.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return t.secret, nil }); err != nil {
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
