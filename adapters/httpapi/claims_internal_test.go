package httpapi

import (
	"errors"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
)

// referenceClaims decodes a payload as UnmarshalJSON did before it walked the tokens
// itself: go-json-experiment's Unmarshal into pointers (exact names, no duplicates,
// nothing after the value), then the same checks. The fuzz target holds the two to
// the same answers.
func referenceClaims(b []byte) (claims, error) {
	var w struct {
		Sub  *string  `json:"sub"`
		Role *string  `json:"role"`
		Exp  *float64 `json:"exp"`
		Nbf  *float64 `json:"nbf"`
		Iat  *float64 `json:"iat"`
	}
	var c claims
	if err := json.Unmarshal(b, &w); err != nil {
		return c, err
	}
	if w.Sub == nil || w.Exp == nil {
		return c, errors.New("sub and exp are required")
	}
	c.subject = *w.Sub
	if w.Role != nil {
		c.role = *w.Role
	}
	for _, d := range []struct {
		in  *float64
		out *time.Time
	}{{w.Exp, &c.expiresAt}, {w.Nbf, &c.notBefore}, {w.Iat, nil}} {
		if d.in == nil {
			continue
		}
		if *d.in < 0 || *d.in > maxNumericDate {
			return c, errors.New("out of range")
		}
		if d.out != nil {
			*d.out = time.Unix(int64(*d.in), 0)
		}
	}
	return c, nil
}

// FuzzClaimsAsTheReference: the token walk of UnmarshalJSON accepts exactly the
// payloads the reflection-based decoding accepted, with the same claims.
func FuzzClaimsAsTheReference(f *testing.F) {
	for _, seed := range []string{
		`{"sub":"42","exp":4102444800}`, `{"sub":"42","exp":4102444800.5,"role":"admin","nbf":1,"iat":2}`,
		`{"sub":"42","exp":"4102444800"}`, `{"sub":42,"exp":1}`, `{"SUB":"42","exp":1}`, `{"s\u0075b":"42","exp":1}`,
		`{"sub":"42","exp":1e400}`, `{"sub":"42","sub":"43","exp":1}`, `{"sub":"42","exp":1} x`, `{"sub":"42","exp":1}  `,
		`{"sub":null,"exp":1}`, `{"sub":"42","exp":-1}`, `{"sub":"4\u00322","exp":1,"x":[1,{"y":null}]}`, `[]`, ``,
		`{"sub":"42","exp":1,"role":7}`, `{"sub":"42","exp":1,"iat":"x"}`, "{\"sub\":\"\xff\",\"exp\":1}",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, payload string) {
		want, wantErr := referenceClaims([]byte(payload))
		var got claims
		err := got.UnmarshalJSON([]byte(payload))
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("payload %q: error %v, the reference %v", payload, err, wantErr)
		}
		if err == nil && got != want {
			t.Fatalf("payload %q: claims %+v, the reference %+v", payload, got, want)
		}
	})
}
