package httpapi_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestHeadAnswersEveryGetRoute: RFC 9110 wants HEAD wherever GET is served; each GET
// route answers HEAD with GET's status and headers and no body.
func TestHeadAnswersEveryGetRoute(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	id := a.createVoucher(5, 1)
	for _, path := range []string{"/healthz", "/readyz", "/api/v1/time", "/openapi.json", "/api/v1/vouchers",
		"/api/v1/vouchers/" + id, "/ui/", "/api/v1/vouchers/" + id + "/stats", "/api/v1/orders"} {
		get := a.raw(http.MethodGet, path, a.admin, "", "")
		head := a.raw(http.MethodHead, path, a.admin, "", "")
		if head.StatusCode != get.StatusCode || head.StatusCode == http.StatusMethodNotAllowed {
			t.Errorf("HEAD %s: %d, GET: %d", path, head.StatusCode, get.StatusCode)
		}
		if ct := head.Header.Get("Content-Type"); ct != get.Header.Get("Content-Type") {
			t.Errorf("HEAD %s: Content-Type %q, GET's %q", path, ct, get.Header.Get("Content-Type"))
		}
		if len(head.Body) != 0 {
			t.Errorf("HEAD %s sent a body of %d bytes", path, len(head.Body))
		}
	}
}

// TestUnauthorizedNamesTheBearerScheme: a 401 carries WWW-Authenticate (RFC 9110,
// RFC 6750), invalid_token when a token was sent.
func TestUnauthorizedNamesTheBearerScheme(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	if r := a.raw(http.MethodGet, "/api/v1/orders", "", "", ""); r.StatusCode != http.StatusUnauthorized ||
		r.Header.Get("WWW-Authenticate") != `Bearer realm="seckill"` {
		t.Fatalf("no token: %d, WWW-Authenticate %q", r.StatusCode, r.Header.Get("WWW-Authenticate"))
	}
	if r := a.raw(http.MethodGet, "/api/v1/orders", "forged", "", ""); r.StatusCode != http.StatusUnauthorized ||
		!strings.Contains(r.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Fatalf("forged token: %d, WWW-Authenticate %q", r.StatusCode, r.Header.Get("WWW-Authenticate"))
	}
}

// TestCreatedNamesItsLocation: a 201 says where what it created is, and that path
// reads it.
func TestCreatedNamesItsLocation(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	r := a.do(http.MethodPost, "/api/v1/vouchers", a.admin, `{"title":"t","stock":3,"begins_at":"2020-01-01T00:00:00Z","ends_at":"2099-01-01T00:00:00Z"}`)
	loc := r.Header.Get("Location")
	if r.Status != http.StatusCreated || loc != "/api/v1/vouchers/"+r.Body["id"].(string) {
		t.Fatalf("create: %d, Location %q, body %v", r.Status, loc, r.Body)
	}
	if got := a.do(http.MethodGet, loc, "", ""); got.Status != http.StatusOK || got.Body["id"] != r.Body["id"] {
		t.Fatalf("GET %s: %d %v", loc, got.Status, got.Body)
	}
}

// TestBodiesOtherThanJSONAreRefused: a body sent as another media type is a 415
// with its code, and changes nothing; JSON with parameters, a +json type or no
// Content-Type at all is read.
func TestBodiesOtherThanJSONAreRefused(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	body := `{"title":"t","stock":3,"begins_at":"2020-01-01T00:00:00Z","ends_at":"2099-01-01T00:00:00Z"}`
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "text/json", "not a type"} {
		r := a.raw(http.MethodPost, "/api/v1/vouchers", a.admin, body, ct)
		if r.StatusCode != http.StatusUnsupportedMediaType || !strings.Contains(string(r.Body), `"unsupported_media_type"`) {
			t.Errorf("Content-Type %q: %d %s, want 415 unsupported_media_type", ct, r.StatusCode, r.Body)
		}
	}
	if list := a.do(http.MethodGet, "/api/v1/vouchers", "", ""); len(list.Body["vouchers"].([]any)) != 0 {
		t.Fatalf("a refused body created a voucher: %v", list.Body)
	}
	for _, ct := range []string{"application/json; charset=utf-8", "application/merge-patch+json", ""} {
		if r := a.raw(http.MethodPost, "/api/v1/vouchers", a.admin, body, ct); r.StatusCode != http.StatusCreated {
			t.Errorf("Content-Type %q: %d, want 201", ct, r.StatusCode)
		}
	}
	// A grab without a body needs no Content-Type.
	id := a.createVoucher(5, 1)
	if r := a.raw(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", a.token(7, false), "", "text/plain"); r.StatusCode != http.StatusAccepted {
		t.Fatalf("grab without a body, Content-Type text/plain: %d, want 202", r.StatusCode)
	}
}

// rawAnswer is an answer as it came: status, headers and the whole body.
type rawAnswer struct {
	StatusCode int
	Header     http.Header
	Body       []byte
}

// raw sends a request with body as contentType ("" for none) and returns the
// answer, its body read whole.
func (a *api) raw(method, path, token, body, contentType string, header ...string) rawAnswer {
	a.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, a.url+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		a.t.Fatalf("%s %s: read the body: %v", method, path, err)
	}
	return rawAnswer{StatusCode: res.StatusCode, Header: res.Header, Body: raw}
}
