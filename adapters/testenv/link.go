package testenv

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
)

// Link is a TCP relay to a real server that a test can cut (down, up) or make stop
// answering (hang, heal), to play a stopped or hung server without touching the
// server other tests and packages share.
type Link struct {
	t      testing.TB
	addr   string
	target string

	mu    sync.Mutex
	ln    net.Listener
	hung  bool
	conns map[net.Conn]bool
}

// NewLink starts a relay to target on a free loopback port; it is cut when the test
// ends.
func NewLink(t testing.TB, target string) *Link {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &Link{t: t, addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]bool{}}
	go l.accept(ln)
	t.Cleanup(l.Down)
	return l
}

// Addr is where to connect to reach the target through the link.
func (l *Link) Addr() string { return l.addr }

func (l *Link) accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", l.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		l.mu.Lock()
		l.conns[c], l.conns[up] = true, true
		l.mu.Unlock()
		go l.pump(up, c)
		go l.pump(c, up)
	}
}

// pump relays src to dst, dropping what it reads while the link hangs.
func (l *Link) pump(dst, src net.Conn) {
	defer func() { _ = dst.Close(); _ = src.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			l.mu.Lock()
			hung := l.hung
			l.mu.Unlock()
			if !hung {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				l.t.Logf("link: %v", err)
			}
			return
		}
	}
}

// Down stops listening and resets every connection: new ones are refused, as by a
// stopped server.
func (l *Link) Down() {
	l.mu.Lock()
	if l.ln != nil {
		_ = l.ln.Close()
		l.ln = nil
	}
	l.mu.Unlock()
	l.closeAll()
}

// Up listens again on the same address.
func (l *Link) Up() {
	l.t.Helper()
	ln, err := net.Listen("tcp", l.addr)
	if err != nil {
		l.t.Fatalf("listen again on %s: %v", l.addr, err)
	}
	l.mu.Lock()
	l.ln = ln
	l.mu.Unlock()
	go l.accept(ln)
}

// Hang makes the link swallow everything, in both directions, on every connection.
func (l *Link) Hang() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.hung = true
}

// Heal makes the link relay again. The connections that lived through the hang lost
// bytes, so they are cut, as a partition that outlives TCP's patience would.
func (l *Link) Heal() {
	l.mu.Lock()
	l.hung = false
	l.mu.Unlock()
	l.closeAll()
}

func (l *Link) closeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		_ = c.Close()
		delete(l.conns, c)
	}
}
