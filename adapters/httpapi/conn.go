package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
)

// JSONErrors wraps ln so that the answers net/http writes by itself, before any
// handler runs, carry the contract's JSON error body instead of text/plain: 400 for a
// request it cannot parse (a malformed request line, method, %-escape in the target,
// header or Host), 431 for headers over http.Server.MaxHeaderBytes, 505 for an
// unsupported protocol version and 501 for an unknown transfer coding. Every other
// error, 405 and 413 included, is answered inside Echo by the error handler — except
// one: an Expect header other than 100-continue, which net/http answers 417 through
// its ordinary response path with no body at all (no text/plain to replace, and no
// way to tell that answer from a handler's).
//
// net/http offers no hook for these answers: it writes each as one fixed-format
// message straight to the connection and closes it. The connections ln accepts
// recognize exactly that message — a status line followed at once by
// "Content-Type: text/plain; charset=utf-8" and "Connection: close", in that order
// and with no Date header, which no response written through a ResponseWriter has —
// and write the same status with a JSON body in its place.
func JSONErrors(ln net.Listener) net.Listener {
	return jsonErrorListener{ln}
}

type jsonErrorListener struct {
	net.Listener
}

// Accept wraps each connection (see JSONErrors).
func (l jsonErrorListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return jsonErrorConn{c}, nil
}

type jsonErrorConn struct {
	net.Conn
}

// plainClose is what follows the status line of net/http's own error answers.
var plainClose = []byte("Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\n")

// serverError matches net/http's own error answers; the groups are the status code
// and the text after the headers.
var serverError = regexp.MustCompile(`\AHTTP/1\.[01] ([0-9]{3}) [^\r\n]*\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n((?s).*)\z`)

// Write passes p through unless it is one of net/http's own error answers, which it
// rewrites with a JSON body. It reports p's length either way, as its caller wrote p.
func (c jsonErrorConn) Write(p []byte) (int, error) {
	// Every answer passes here, so the common case is told apart cheaply first: only
	// net/http's own answers put that Content-Type right after the status line.
	line := bytes.Index(p, []byte("\r\n"))
	if !bytes.HasPrefix(p, []byte("HTTP/1.")) || line < 0 || !bytes.HasPrefix(p[line+2:], plainClose) {
		return c.Conn.Write(p)
	}
	m := serverError.FindSubmatch(p)
	if m == nil {
		return c.Conn.Write(p)
	}
	if _, err := c.Conn.Write(jsonServerError(m[1], m[2])); err != nil {
		return 0, err
	}
	return len(p), nil
}

// jsonServerError is the answer for net/http's error with status code and text.
func jsonServerError(code, text []byte) []byte {
	status, _ := strconv.Atoi(string(code))
	// Each is the client's doing, so each is an invalid request, whatever its status.
	// The request was never parsed, so its X-Request-Id is not known: it gets a new
	// one, in the header and the body as every other answer has it.
	rid := newRequestID()
	detail := errorDetail{Code: "invalid_request", Message: string(text), RequestID: rid}
	if status == http.StatusRequestHeaderFieldsTooLarge {
		detail.Message = "request headers too large"
	}
	// The texts are net/http's constants; encoding/json escapes them all the same.
	body, _ := json.Marshal(errorBody{Error: detail})
	body = append(body, '\n')
	return fmt.Appendf(nil, "HTTP/1.1 %03d %s\r\nContent-Type: application/json\r\nX-Request-Id: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, http.StatusText(status), rid, len(body), body)
}

// CloseWrite half-closes the connection when the wrapped one can: net/http does so
// after a 431 to let the client read the answer before the connection goes.
func (c jsonErrorConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
