package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/cristalhq/jwt/v4"
	"github.com/go-json-experiment/json/jsontext"
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

// UnmarshalJSON reads the payload of a token: one JSON object, member names exact
// (escapes allowed) and not repeated, sub and role strings, exp (required), nbf and
// iat JSON numbers between 0 and maxNumericDate, times read to the second, nothing
// after the object. Other members are ignored, as JWT asks. It walks the tokens of the
// payload with a pooled decoder (no reflection, no value boxed), since every grab of a
// user not seen before pays for it.
func (c *claims) UnmarshalJSON(b []byte) error {
	d := claimsDecoders.Get().(*claimsDecoder)
	defer claimsDecoders.Put(d)
	d.r.Reset(b)
	d.d.Reset(&d.r)
	if err := c.decode(&d.d); err != nil {
		return fmt.Errorf("claims: %w", err)
	}
	return nil
}

// claimsDecoder is a reusable JSON decoder and the reader it reads from.
type claimsDecoder struct {
	r bytes.Reader
	d jsontext.Decoder
}

var claimsDecoders = sync.Pool{New: func() any { return new(claimsDecoder) }}

func (c *claims) decode(d *jsontext.Decoder) error {
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return errors.New("not a JSON object")
	}
	var sub, exp bool
	for d.PeekKind() == '"' {
		name, err := d.ReadValue() // a member name: duplicates are refused by the decoder
		if err != nil {
			return err
		}
		switch string(memberName(name)) {
		case "sub":
			if c.subject, err = readString(d, "sub"); err != nil {
				return err
			}
			sub = true
		case "role":
			if c.role, err = readString(d, "role"); err != nil {
				return err
			}
		case "exp":
			if c.expiresAt, err = readDate(d, "exp"); err != nil {
				return err
			}
			exp = true
		case "nbf":
			if c.notBefore, err = readDate(d, "nbf"); err != nil {
				return err
			}
		case "iat":
			if _, err = readDate(d, "iat"); err != nil {
				return err
			}
		default:
			if err := d.SkipValue(); err != nil {
				return err
			}
		}
	}
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '}' {
		return errors.New("malformed object")
	}
	if _, err := d.ReadToken(); !errors.Is(err, io.EOF) {
		return errors.New("data after the object")
	}
	if !sub {
		return errors.New("sub is required")
	}
	if !exp {
		return errors.New("exp is required")
	}
	return nil
}

// memberName is the name a quoted member name stands for: quoted without its quotes
// when it holds no escape (the usual case: nothing copied), else unquoted.
func memberName(quoted jsontext.Value) []byte {
	if bytes.IndexByte(quoted, '\\') < 0 {
		return quoted[1 : len(quoted)-1]
	}
	name, err := jsontext.AppendUnquote(nil, quoted)
	if err != nil {
		return nil
	}
	return name
}

// readString reads the value of member name, which must be a JSON string.
func readString(d *jsontext.Decoder, name string) (string, error) {
	if d.PeekKind() != '"' {
		return "", fmt.Errorf("%s is not a string", name)
	}
	tok, err := d.ReadToken()
	if err != nil {
		return "", err
	}
	return tok.String(), nil
}

// readDate reads the value of member name, a NumericDate: a JSON number of seconds
// between 0 and maxNumericDate, kept to the second.
func readDate(d *jsontext.Decoder, name string) (time.Time, error) {
	if d.PeekKind() != '0' {
		return time.Time{}, fmt.Errorf("%s is not a number", name)
	}
	tok, err := d.ReadToken()
	if err != nil {
		return time.Time{}, err
	}
	f, err := tok.Float()
	if err != nil || f < 0 || f > maxNumericDate {
		return time.Time{}, fmt.Errorf("%s is out of range", name)
	}
	return time.Unix(int64(f), 0), nil
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
