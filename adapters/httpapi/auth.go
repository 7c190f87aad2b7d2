package httpapi

import (
	"errors"
	"fmt"
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

// Tokens mints and verifies HS256 bearer tokens.
type Tokens struct {
	secret []byte
	parser *jwt.Parser
}

// NewTokens returns a token codec for secret.
func NewTokens(secret []byte) *Tokens {
	return &Tokens{
		secret: secret,
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
			jwt.WithExpirationRequired(),
		),
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
	var c claims
	if _, err := t.parser.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return t.secret, nil }); err != nil {
		return Principal{}, fmt.Errorf("parse token: %w", err)
	}
	user, err := domain.ParseUserID(c.Subject)
	if err != nil {
		return Principal{}, fmt.Errorf("token subject: %w", err)
	}
	return Principal{User: user, Admin: c.Role == roleAdmin}, nil
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
