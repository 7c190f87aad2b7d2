package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

// reconcileCLI runs `seckill reconcile` against the instance's Redis and database and
// returns its exit status and its JSON findings.
func (fi *fulfillInstance) reconcileCLI(voucher string, repair bool) (int, map[string]any) {
	fi.t.Helper()
	args := []string{"reconcile", "--json", "--voucher", voucher}
	if repair {
		args = append(args, "--repair")
	}
	out, err := runCmdStdout(seckillBinary(fi.t), fi.env, args...)
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		fi.t.Fatalf("reconcile: %v", err)
	}
	var report map[string]any
	if jerr := json.Unmarshal([]byte(out), &report); jerr != nil {
		fi.t.Fatalf("reconcile printed no JSON (exit %d): %q", code, out)
	}
	return code, report
}

func runCmdStdout(bin string, env []string, args ...string) (string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	out, err := cmd.Output()
	return string(out), err
}

// driftKinds lists the kinds of drift a reconcile report names.
func driftKinds(report map[string]any) []string {
	var kinds []string
	vs, _ := report["vouchers"].([]any)
	for _, v := range vs {
		ds, _ := v.(map[string]any)["drifts"].([]any)
		for _, d := range ds {
			kinds = append(kinds, d.(map[string]any)["kind"].(string))
		}
	}
	return kinds
}

// act pays or cancels an order as its owner and returns the answer's status.
func (fi *fulfillInstance) act(action, order string, user int64) (int, map[string]any) {
	fi.t.Helper()
	return fi.call(http.MethodPost, "/api/v1/orders/"+order+"/"+action, fi.token(domain.UserID(user), false), nil)
}

// assertStatsAddUp checks stock = remaining + queued + awaiting_payment + paid, read
// from Redis and the database separately.
func (fi *fulfillInstance) assertStatsAddUp(voucher string) map[string]float64 {
	fi.t.Helper()
	st := fi.stats(voucher)
	if st["stock"] != st["remaining"]+st["queued"]+st["awaiting_payment"]+st["paid"] {
		fi.t.Fatalf("stats do not add up: %v", st)
	}
	return st
}

func (fi *fulfillInstance) exec(sql string, args ...any) {
	fi.t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, fi.dbURL)
	if err != nil {
		fi.t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		fi.t.Fatalf("%s: %v", sql, err)
	}
}

// TestSaleLifecycle is a whole sale: grab, pay some, cancel some, let some expire,
// re-grab the returned units; the stats add up and reconcile finds nothing.
func TestSaleLifecycle(t *testing.T) {
	const timeout = 3 * time.Second
	fi := startFulfillInstance(t, "SECKILL_PAYMENT_TIMEOUT="+timeout.String(), "SECKILL_RECONCILE_GRACE=1s")
	id := fi.createVoucher(10, 1)
	g := newGrabs()
	fi.prime(id, 1, g)
	g.merge(fi.fireGrabs(id, burstUsers(2, 20, 2)))
	if got := len(g.reserved); got != 10 {
		t.Fatalf("reserved %d, want 10", got)
	}
	fi.waitSettled(id, 10, 30*time.Second)

	var paid, cancelled []string
	i := 0
	for order, user := range g.reserved {
		switch {
		case i < 3:
			if status, body := fi.act("pay", order, user); status != http.StatusOK || body["status"] != "paid" {
				t.Fatalf("pay: %d %v", status, body)
			}
			paid = append(paid, order)
		case i < 6:
			if status, body := fi.act("cancel", order, user); status != http.StatusOK || body["status"] != "cancelled" {
				t.Fatalf("cancel: %d %v", status, body)
			}
			cancelled = append(cancelled, order)
		}
		i++
	}
	// Cancelled units are back on sale at once; the four left unpaid expire.
	if st := fi.assertStatsAddUp(id); st["remaining"] != 3 || st["cancelled"] != 3 || st["paid"] != 3 {
		t.Fatalf("after pay and cancel: %v", st)
	}
	took := testenv.Eventually(t, timeout+5*time.Second, "unpaid orders expired", func() (bool, string) {
		st := fi.stats(id)
		return st["expired"] == 4 && st["remaining"] == 7, fmt.Sprint(st)
	})
	t.Logf("unpaid orders expired and their units returned %v after the check began", took)
	// Paying or cancelling a closed order changes nothing.
	for order, user := range g.reserved {
		if status, body := fi.act("pay", order, user); status == http.StatusOK && !contains(paid, order) {
			t.Fatalf("a closed order was paid: %v", body)
		}
	}

	// The returned units sell again, to new users and to those whose orders closed.
	again := []int64{}
	for _, order := range cancelled {
		again = append(again, g.reserved[order])
	}
	for u := int64(100); u < 110; u++ {
		again = append(again, u)
	}
	second := fi.fireGrabs(id, again)
	if got := len(second.reserved); got != 7 {
		t.Fatalf("re-grab reserved %d, want the 7 returned units", got)
	}
	fi.waitSettled(id, 17, 30*time.Second)
	st := fi.assertStatsAddUp(id)
	if st["remaining"] != 0 || st["awaiting_payment"] != 7 || st["paid"] != 3 {
		t.Fatalf("final stats: %v", st)
	}
	if code, report := fi.reconcileCLI(id, false); code != 0 || len(driftKinds(report)) != 0 {
		t.Fatalf("reconcile: exit %d, %v", code, report)
	}
}

// TestPaymentTimeoutSurvivesARestart: the sweeper is driven by the database, so an
// order left unpaid while no instance runs still expires promptly after a restart.
func TestPaymentTimeoutSurvivesARestart(t *testing.T) {
	const timeout = 2 * time.Second
	fi := startFulfillInstance(t, "SECKILL_PAYMENT_TIMEOUT="+timeout.String())
	id := fi.createVoucher(1, 1)
	g := newGrabs()
	fi.prime(id, 7, g)
	fi.stop()
	time.Sleep(timeout) // the timeout lapses while nothing runs
	fi.start()
	took := testenv.Eventually(t, 5*time.Second, "the order expired after the restart", func() (bool, string) {
		st := fi.stats(id)
		return st["expired"] == 1 && st["remaining"] == 1, fmt.Sprint(st)
	})
	t.Logf("expired %v after the restart", took)
	if status, body := fi.act("pay", g.holder[7], 7); status != http.StatusConflict || body["error"].(map[string]any)["code"] != "invalid_state" {
		t.Fatalf("pay after expiry: %d %v", status, body)
	}
}

// TestReconcileRepairsInjectedDrift injects each kind of drift the issue names into a
// quiet sale and checks that `seckill reconcile` finds it (exit 1), that --repair
// fixes it (exit 0), and that the sale is consistent afterwards.
func TestReconcileRepairsInjectedDrift(t *testing.T) {
	fi := startFulfillInstance(t, "SECKILL_RECONCILE_GRACE=1s")
	ctx := context.Background()
	tests := []struct {
		name   string
		inject func(id string, vid domain.VoucherID, g grabs)
		want   string
	}{
		{"delete a reservation", func(_ string, vid domain.VoucherID, g grabs) {
			user := firstUser(g)
			fi.redis.HDel(ctx, fi.keys.Buyers(vid), fmt.Sprint(user))
			fi.redis.HDel(ctx, fi.keys.Orders(vid), g.holder[user])
		}, "order_without_reservation"},
		{"delete an order row", func(_ string, _ domain.VoucherID, g grabs) {
			fi.exec("DELETE FROM orders WHERE id = $1", g.holder[firstUser(g)])
		}, "reservation_without_order"},
		{"flush the voucher's redis keys", func(_ string, vid domain.VoucherID, _ grabs) {
			fi.redis.Del(ctx, fi.keys.Meta(vid), fi.keys.Buyers(vid), fi.keys.Orders(vid), fi.keys.Stream(vid))
		}, "sale_state_missing"},
	}
	// One instance for every case, so no t.Run: the instance's helpers fail the test
	// they were started by; each message names its case.
	for _, tt := range tests {
		id := fi.createVoucher(5, 1)
		vid := fi.voucherID(id)
		g := newGrabs()
		fi.prime(id, 1, g)
		g.merge(fi.fireGrabs(id, burstUsers(10, 4, 0)))
		fi.waitSettled(id, 5, 30*time.Second)
		if code, report := fi.reconcileCLI(id, false); code != 0 {
			t.Fatalf("%s: before the drift: exit %d, %v", tt.name, code, report)
		}
		tt.inject(id, vid, g)
		// Found once the reservations are past the reconcile grace.
		testenv.Eventually(t, 30*time.Second, tt.name+": "+tt.want+" found", func() (bool, string) {
			code, report := fi.reconcileCLI(id, false)
			return code == 1 && contains(driftKinds(report), tt.want), fmt.Sprintf("exit %d, kinds %v", code, driftKinds(report))
		})
		if code, report := fi.reconcileCLI(id, true); code != 0 {
			t.Fatalf("%s: repair: exit %d, %v", tt.name, code, report)
		}
		testenv.Eventually(t, 15*time.Second, tt.name+": consistent after the repair", func() (bool, string) {
			code, report := fi.reconcileCLI(id, false)
			return code == 0, fmt.Sprintf("exit %d, %v", code, report)
		})
		// A quiet moment: everything requeued is persisted and acknowledged.
		fi.waitSettled(id, 5, 15*time.Second)
		st := fi.assertStatsAddUp(id)
		if st["awaiting_payment"] != 5 || st["remaining"] != 0 {
			t.Fatalf("%s: stats after the repair: %v", tt.name, st)
		}
		// Nobody can buy twice after the repair.
		for user := range g.holder {
			status, body := fi.call(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", fi.token(domain.UserID(user), false), nil)
			if status == http.StatusAccepted {
				t.Fatalf("%s: user %d grabbed again after the repair: %v", tt.name, user, body)
			}
		}
	}
}

// TestReconcileRequeuesALostStreamEntry loses a reservation's stream entry before any
// worker read it; reconcile --repair requeues it and the worker persists it.
func TestReconcileRequeuesALostStreamEntry(t *testing.T) {
	fi := startFulfillInstance(t, "SECKILL_RECONCILE_GRACE=1s", "SECKILL_ROLES=api")
	ctx := context.Background()
	id := fi.createVoucher(3, 1)
	vid := fi.voucherID(id)
	status, body := fi.call(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", fi.token(5, false), nil)
	if status != http.StatusAccepted {
		t.Fatalf("grab: %d %v", status, body)
	}
	entries, err := fi.redis.XRange(ctx, fi.keys.Stream(vid), "-", "+").Result()
	if err != nil || len(entries) != 1 {
		t.Fatalf("stream: %v, %v", entries, err)
	}
	fi.redis.XDel(ctx, fi.keys.Stream(vid), entries[0].ID)
	// Found once the reservation is past the reconcile grace.
	testenv.Eventually(t, 30*time.Second, "the lost entry found", func() (bool, string) {
		code, report := fi.reconcileCLI(id, false)
		return code == 1 && contains(driftKinds(report), "reservation_without_order"), fmt.Sprintf("exit %d, %v", code, report)
	})
	if code, report := fi.reconcileCLI(id, true); code != 0 {
		t.Fatalf("repair: exit %d, %v", code, report)
	}
	// A worker now persists the requeued reservation.
	fi.stop()
	fi.env = append(fi.env, "SECKILL_ROLES=api,worker")
	fi.start()
	fi.waitSettled(id, 1, 15*time.Second)
	if code, report := fi.reconcileCLI(id, false); code != 0 {
		t.Fatalf("after the repair: exit %d, %v", code, report)
	}
	fi.assertStatsAddUp(id)
}

func TestReconcileUnknownVoucher(t *testing.T) {
	fi := startFulfillInstance(t)
	out, err := runCmd(seckillBinary(t), fi.env, "reconcile", "--voucher", "424242")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 || !strings.Contains(out, "424242") {
		t.Fatalf("reconcile of an unknown voucher: %v, %q", err, out)
	}
	out, err = runCmd(seckillBinary(t), fi.env, "reconcile", "--voucher", "abc")
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("reconcile --voucher abc: %v, %q", err, out)
	}
}

func firstUser(g grabs) int64 {
	first := int64(-1)
	for u := range g.holder {
		if first < 0 || u < first {
			first = u
		}
	}
	return first
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
