package httpapi

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/golang-jwt/jwt/v5"
	echojwt "github.com/labstack/echo-jwt/v4"
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
// names case-insensitively, so {"SUB": ...} would pass for the subject.
type claims struct {
	subject   string
	role      string
	expiresAt *jwt.NumericDate
	notBefore *jwt.NumericDate
	issuedAt  *jwt.NumericDate
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
		out  **jwt.NumericDate
	}{{"exp", w.Exp, &c.expiresAt}, {"nbf", w.Nbf, &c.notBefore}, {"iat", w.Iat, &c.issuedAt}} {
		if d.in == nil {
			continue
		}
		if *d.in < 0 || *d.in > maxNumericDate {
			return fmt.Errorf("claims: %s is out of range", d.name)
		}
		sec, frac := math.Modf(*d.in)
		*d.out = jwt.NewNumericDate(time.Unix(int64(sec), int64(frac*1e9)))
	}
	return nil
}

// The jwt.Claims methods the parser's validator reads.

func (c *claims) GetExpirationTime() (*jwt.NumericDate, error) { return c.expiresAt, nil }
func (c *claims) GetNotBefore() (*jwt.NumericDate, error)      { return c.notBefore, nil }
func (c *claims) GetIssuedAt() (*jwt.NumericDate, error)       { return c.issuedAt, nil }
func (c *claims) GetIssuer() (string, error)                   { return "", nil }
func (c *claims) GetSubject() (string, error)                  { return c.subject, nil }
func (c *claims) GetAudience() (jwt.ClaimStrings, error)       { return nil, nil }

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

type knownToken struct {
	p   Principal
	exp time.Time
}

// maxKnownTokens bounds the memory of verified tokens; past it the memory starts over.
const maxKnownTokens = 200_000

// NewTokens returns a token codec for secret.
func NewTokens(secret []byte) *Tokens {
	return &Tokens{
		secret: secret,
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
			jwt.WithExpirationRequired(),
		),
		known: make(map[string]knownToken),
	}
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
	t.mu.RLock()
	k, ok := t.known[token]
	t.mu.RUnlock()
	if ok && time.Now().Before(k.exp) {
		return k.p, nil
	}
	var c claims
	if _, err := t.parser.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return t.secret, nil }); err != nil {
		return Principal{}, fmt.Errorf("parse token: %w", err)
	}
	user, err := domain.ParseUserID(c.subject)
	if err != nil {
		return Principal{}, fmt.Errorf("token subject: %w", err)
	}
	p := Principal{User: user, Admin: c.role == roleAdmin}
	t.mu.Lock()
	if len(t.known) >= maxKnownTokens {
		clear(t.known)
	}
	t.known[token] = knownToken{p: p, exp: c.expiresAt.Time}
	t.mu.Unlock()
	return p, nil
}

var (
	errUnauthorized = errors.New("missing, malformed, expired or forged bearer token")
	errForbidden    = errors.New("admin role required")
)

const principalKey = "principal"

// authenticate requires a valid bearer token and stores its Principal in the context.
func authenticate(tokens *Tokens) echo.MiddlewareFunc {
	return echojwt.WithConfig(echojwt.Config{
		ContextKey: principalKey,
		ParseTokenFunc: func(_ echo.Context, auth string) (any, error) {
			return tokens.Parse(auth)
		},
		ErrorHandler: func(echo.Context, error) error { return errUnauthorized },
	})
}

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
	p, _ := c.Get(principalKey).(Principal)
	return p
}
