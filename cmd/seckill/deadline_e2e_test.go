package main

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

// expiresAt reads the expires_at an order of user is answered with (zero once it is
// closed), and its status.
func (fi *fulfillInstance) expiresAt(order string, user int64) (time.Time, string) {
	fi.t.Helper()
	status, o := fi.call(http.MethodGet, "/api/v1/orders/"+order, fi.token(domain.UserID(user), false), nil)
	if status != http.StatusOK {
		fi.t.Fatalf("order %s: %d %v", order, status, o)
	}
	s, _ := o["expires_at"].(string)
	if st := fmt.Sprint(o["status"]); s == "" && st != "queued" && st != "awaiting_payment" {
		return time.Time{}, st
	}
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		fi.t.Fatalf("order %s: expires_at %q: %v (%v)", order, s, err, o)
	}
	return at, fmt.Sprint(o["status"])
}

// TestAnAnnouncedDeadlineSurvivesARestartWithAShorterTimeout: orders answered with
// an expires_at under a 40 s SECKILL_PAYMENT_TIMEOUT — two persisted, one still
// queued (taken by an instance without a worker) — keep it when serve restarts with
// 2 s: they are answered with it, neither expired nor refused payment before it, and
// expired after it; an order taken after the restart has the 2 s window.
// DESIGN.md v1.3 "Time".
func TestAnAnnouncedDeadlineSurvivesARestartWithAShorterTimeout(t *testing.T) {
	// long leaves a busy machine time for two restarts and the checks between them
	// before the first deadline.
	const long, short = 40 * time.Second, 2 * time.Second
	fi := startFulfillInstance(t, "SECKILL_PAYMENT_TIMEOUT="+long.String())
	id := fi.createVoucher(4, 1)
	g := newGrabs()
	fi.prime(id, 1, g)
	fi.prime(id, 2, g)

	// An instance without a worker: its grab stays queued in Redis.
	fi.stop()
	fi.env = append(fi.env, "SECKILL_ROLES=api")
	fi.start()
	status, body := fi.call(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", fi.token(3, false), nil)
	queued, _ := body["order_id"].(string)
	if status != http.StatusAccepted || queued == "" {
		t.Fatalf("grab: %d %v", status, body)
	}
	g.holder[3] = queued
	announced := map[int64]time.Time{}
	for _, u := range []int64{1, 2, 3} {
		at, st := fi.expiresAt(g.holder[u], u)
		if want := map[bool]string{true: "queued", false: "awaiting_payment"}[u == 3]; st != want {
			t.Fatalf("user %d's order is %s, want %s", u, st, want)
		}
		announced[u] = at
	}

	fi.stop()
	fi.env = append(fi.env, "SECKILL_ROLES=api,worker", "SECKILL_PAYMENT_TIMEOUT="+short.String())
	fi.start()
	testenv.Eventually(t, 15*time.Second, "the queued order persisted", func() (bool, string) {
		_, st := fi.expiresAt(queued, 3)
		return st == "awaiting_payment", st
	})
	for u, want := range announced {
		if got, st := fi.expiresAt(g.holder[u], u); !got.Equal(want) || st != "awaiting_payment" {
			t.Fatalf("after the restart user %d's order is %s, expires at %v; announced %v", u, st, got, want)
		}
	}
	status, body = fi.call(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", fi.token(4, false), nil)
	fresh, _ := body["order_id"].(string)
	if status != http.StatusAccepted {
		t.Fatalf("grab after the restart: %d %v", status, body)
	}
	testenv.Eventually(t, 15*time.Second, "the new order persisted", func() (bool, string) {
		_, st := fi.expiresAt(fresh, 4)
		return st == "awaiting_payment", st
	})
	status, o := fi.call(http.MethodGet, "/api/v1/orders/"+fresh, fi.token(4, false), nil)
	at, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(o["created_at"]))
	if got, _ := fi.expiresAt(fresh, 4); status != http.StatusOK || !got.Equal(at.Add(short)) {
		t.Fatalf("the new order expires at %v, want %v after its creation %v", got, short, at)
	}

	// Past the short window and the sweeper's 5 s: the orders announced earlier are
	// still awaiting payment, and one of them can be paid.
	created := announced[1].Add(-long)
	time.Sleep(time.Until(created.Add(short + 6*time.Second)))
	if time.Now().After(announced[1]) {
		t.Fatalf("the restart took too long to judge: it is past the deadline %v", announced[1])
	}
	for _, u := range []int64{1, 2, 3} {
		if _, st := fi.expiresAt(g.holder[u], u); st != "awaiting_payment" {
			t.Fatalf("user %d's order is %s before its announced deadline %v", u, st, announced[u])
		}
	}
	if status, body := fi.act("pay", g.holder[2], 2); status != http.StatusOK {
		t.Fatalf("pay before the announced deadline: %d %v", status, body)
	}
	for _, u := range []int64{1, 3} {
		testenv.Eventually(t, long+10*time.Second, "the order expired", func() (bool, string) {
			_, st := fi.expiresAt(g.holder[u], u)
			return st == "expired", st
		})
		if now := time.Now(); now.Before(announced[u]) {
			t.Fatalf("user %d's order expired at %v, before its announced deadline %v", u, now, announced[u])
		}
	}
}
