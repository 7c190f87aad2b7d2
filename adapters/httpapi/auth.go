package httpapi

import (
	"errors"
	"fmt"
	"sync"
	"time"

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

// claims are the JWT claims seckill reads: the registered ones (sub, exp) and role.
type claims struct {
	Role string `json:"role,omitempty"`
	jwt.RegisteredClaims
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
	c := claims{RegisteredClaims: jwt.RegisteredClaims{
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

// Parse verifies a token (signature, algorithm, expiry) and returns its principal. The
// subject must be a positive decimal user id.
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
	user, err := domain.ParseUserID(c.Subject)
	if err != nil {
		return Principal{}, fmt.Errorf("token subject: %w", err)
	}
	p := Principal{User: user, Admin: c.Role == roleAdmin}
	t.mu.Lock()
	if len(t.known) >= maxKnownTokens {
		clear(t.known)
	}
	t.known[token] = knownToken{p: p, exp: c.ExpiresAt.Time}
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
