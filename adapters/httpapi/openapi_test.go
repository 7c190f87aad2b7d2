package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/seckill/seckill/adapters/httpapi"
)

var (
	specOnce   sync.Once
	specDoc    *openapi3.T
	specRouter routers.Router
	specErr    error
)

// spec loads and validates the committed OpenAPI document once.
func spec(t testing.TB) (*openapi3.T, routers.Router) {
	t.Helper()
	specOnce.Do(func() {
		loader := openapi3.NewLoader()
		if specDoc, specErr = loader.LoadFromData(httpapi.OpenAPI); specErr != nil {
			return
		}
		if specErr = specDoc.Validate(context.Background()); specErr != nil {
			return
		}
		specRouter, specErr = gorillamux.NewRouter(specDoc)
	})
	if specErr != nil {
		t.Fatalf("openapi.json: %v", specErr)
	}
	return specDoc, specRouter
}

// checkResponse fails the test when an answer to method path is not what the
// OpenAPI document says that operation answers: an undocumented status, a JSON body
// off its schema, or a route the document lacks.
func checkResponse(t testing.TB, method, path string, status int, header http.Header, body []byte) {
	t.Helper()
	_, router := spec(t)
	u, err := url.Parse(path)
	if err != nil {
		t.Fatalf("openapi: %s %s: %v", method, path, err)
	}
	req := &http.Request{Method: method, URL: u, Header: http.Header{}, Host: "localhost"}
	route, params, err := router.FindRoute(req)
	if err != nil {
		if status == http.StatusNotFound || status == http.StatusMethodNotAllowed {
			return // an unknown route: nothing documented to hold it to
		}
		t.Fatalf("openapi: %s %s answered %d but the document has no such operation: %v", method, path, status, err)
	}
	opts := &openapi3filter.Options{IncludeResponseStatus: true}
	if !strings.HasPrefix(header.Get("Content-Type"), "application/json") {
		opts.ExcludeResponseBody = true
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts},
		Status:                 status,
		Header:                 header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                opts,
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Errorf("openapi: %s %s answered %d %s, which the document does not allow: %v", method, path, status, body, err)
	}
	if !opts.ExcludeResponseBody {
		var v any
		if json.Unmarshal(body, &v) == nil {
			checkStamps(t, method+" "+path, v)
		}
	}
}

// timeLike and stampForm: a string that starts as a date and time is a time the
// service wrote, and the contract (v1.3, "Time") spells each one way: UTC, exactly
// three fractional digits.
var (
	timeLike  = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:`)
	stampForm = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)
)

// checkStamps fails the test for every time in v (a decoded JSON answer, what names
// it) not written as the contract spells times.
func checkStamps(t testing.TB, what string, v any) {
	t.Helper()
	switch v := v.(type) {
	case string:
		if timeLike.MatchString(v) && !stampForm.MatchString(v) {
			t.Errorf("%s answered the time %q: want RFC 3339 in UTC with three fractional digits", what, v)
		}
	case []any:
		for _, e := range v {
			checkStamps(t, what, e)
		}
	case map[string]any:
		for _, e := range v {
			checkStamps(t, what, e)
		}
	}
}

// pathOf turns an Echo route pattern into the document's: ":id" → "{id}", the static
// files' "/ui/*" → "/ui/{asset}".
func pathOf(echoPath string) string {
	parts := strings.Split(echoPath, "/")
	for i, p := range parts {
		switch {
		case strings.HasPrefix(p, ":"):
			parts[i] = "{" + p[1:] + "}"
		case p == "*":
			parts[i] = "{asset}"
		}
	}
	return strings.Join(parts, "/")
}

// The document and the router name the same operations: a route missing from the
// document fails, and so does a documented operation the router lacks.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	t.Parallel()
	doc, _ := spec(t)
	e := httpapi.New(httpapi.Options{BodyLimit: "4K", RequestTimeout: time.Second}, httpapi.UseCases{},
		httpapi.NewTokens([]byte(secret)), nil, testLogger(t))
	var routed []string
	for _, r := range e.Routes() {
		if r.Method == http.MethodHead {
			continue // every GET route answers HEAD, as info.description says
		}
		routed = append(routed, r.Method+" "+pathOf(r.Path))
	}
	var documented []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented = append(documented, method+" "+path)
		}
	}
	slices.Sort(routed)
	routed = slices.Compact(routed)
	slices.Sort(documented)
	for _, r := range routed {
		if !slices.Contains(documented, r) {
			t.Errorf("route %s is not in openapi.json", r)
		}
	}
	for _, d := range documented {
		if !slices.Contains(routed, d) {
			t.Errorf("openapi.json names %s, which the router lacks", d)
		}
	}
}

// GET /openapi.json serves the committed document.
func TestOpenAPIIsServed(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	r := a.do(http.MethodGet, "/openapi.json", "", "")
	if r.Status != http.StatusOK || r.Raw != string(httpapi.OpenAPI) {
		t.Fatalf("GET /openapi.json: %d, %d bytes; want 200 and the document", r.Status, len(r.Raw))
	}
	if r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("Content-Type = %q", r.Header.Get("Content-Type"))
	}
}
