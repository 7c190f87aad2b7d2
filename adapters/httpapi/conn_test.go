package httpapi

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

// TestJSONErrorsBelowEcho sends requests net/http answers by itself and checks each
// answer carries the JSON error body, while well-formed requests pass untouched.
func TestJSONErrorsBelowEcho(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := New(Options{BodyLimit: "1K", RequestTimeout: time.Second}, UseCases{}, NewTokens([]byte("0123456789abcdef")), nil, zaptest.NewLogger(t))
	srv := &http.Server{Handler: e, ReadHeaderTimeout: 5 * time.Second, MaxHeaderBytes: 1 << 10}
	go func() { _ = srv.Serve(JSONErrors(ln)) }()
	t.Cleanup(func() { _ = srv.Close() })

	huge := "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("a", 64<<10) + "\r\n\r\n"
	cases := []struct {
		name, request string
		status        int
	}{
		{"bad escape in the target", "GET /api/v1/vouchers/%zz HTTP/1.1\r\nHost: x\r\n\r\n", 400},
		{"bad method", "G@T /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 400},
		{"no Host", "GET /healthz HTTP/1.1\r\n\r\n", 400},
		{"bad header name", "GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n", 400},
		{"bad protocol version", "GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n", 505},
		{"unknown transfer coding", "POST /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: rot13\r\n\r\n", 501},
		{"headers too large", huge, 431},
		{"unknown method, well-formed", "PURGE /api/v1/vouchers HTTP/1.1\r\nHost: x\r\n\r\n", 405},
		{"body too large", "POST /api/v1/vouchers HTTP/1.1\r\nHost: x\r\nContent-Length: 2048\r\n\r\n" + strings.Repeat("a", 2048), 413},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := roundTrip(t, ln.Addr().String(), tc.request)
			defer res.Body.Close()
			body, _ := io.ReadAll(res.Body)
			var got errorBody
			want := "invalid_request"
			if tc.status == http.StatusMethodNotAllowed {
				want = "method_not_allowed"
			}
			if err := json.Unmarshal(body, &got); err != nil || got.Error.Code != want || got.Error.Message == "" {
				t.Fatalf("body %q (%v), want the JSON error body with code %s", body, err, want)
			}
			if got.Error.RequestID == "" || got.Error.RequestID != res.Header.Get("X-Request-Id") {
				t.Fatalf("request_id %q, X-Request-Id %q: want one, the same in both", got.Error.RequestID, res.Header.Get("X-Request-Id"))
			}
			if ct := res.Header.Get("Content-Type"); res.StatusCode != tc.status || !strings.HasPrefix(ct, "application/json") {
				t.Fatalf("got %d %q, want %d application/json", res.StatusCode, ct, tc.status)
			}
		})
	}
	res := roundTrip(t, ln.Addr().String(), "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	defer res.Body.Close()
	if body, _ := io.ReadAll(res.Body); res.StatusCode != 200 || !strings.Contains(string(body), `"ok"`) {
		t.Fatalf("healthz through the wrapper: %d %q", res.StatusCode, body)
	}
}

// roundTrip writes raw on a new connection to addr and reads one response.
func roundTrip(t *testing.T, addr, raw string) *http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	// The server may answer and close before reading all of a large request.
	go func() { _, _ = io.WriteString(conn, raw) }()
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	t.Cleanup(func() { _ = res.Body.Close() })
	return res
}
