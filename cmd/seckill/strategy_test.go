package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/strategies/sqlstock"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

func TestStrategyNames(t *testing.T) {
	for _, name := range []string{"lua", "watch", "postgres"} {
		s, err := parseStockStrategy(name)
		if err != nil {
			t.Fatalf("parse %q: %v", name, err)
		}
		if got, want := string(s), name; got != want {
			t.Fatalf("parse %q = %q", name, got)
		}
		if err := (StrategyConfig{StockStrategy: name}).Validate(); err != nil {
			t.Fatalf("Validate(%q) = %v", name, err)
		}
	}
	for _, name := range []string{"", "Lua", "redis", "pg"} {
		err := (StrategyConfig{StockStrategy: name}).Validate()
		if err == nil {
			t.Fatalf("Validate(%q) accepted it", name)
		}
		if got, want := err.Error(), fmt.Sprintf(`SECKILL_STOCK_STRATEGY (--stock-strategy): %q is not one of lua, watch, postgres`, name); got != want {
			t.Fatalf("Validate(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestStrategySelectsTheAdapters(t *testing.T) {
	lua := redisstore.NewStock(nil, redisstore.Options{})
	audit := redisstore.NewAudit(nil, redisstore.Options{})
	db := sqlstock.New(nil, nil, 0)
	for _, tc := range []struct {
		strategy StockStrategy
		stock    string
		audit    string
	}{
		{StrategyLua, "*redisstore.Stock", "*redisstore.Audit"},
		{StrategyWatch, "*watchstock.Stock", "*redisstore.Audit"},
		{StrategyPostgres, "*sqlstock.Stock", "*sqlstock.Stock"},
	} {
		stock := selectStock(tc.strategy, lua, db)
		if got, want := fmt.Sprintf("%T", stock), tc.stock; got != want {
			t.Fatalf("%s: stock %s, want %s", tc.strategy, got, want)
		}
		if got, want := fmt.Sprintf("%T", selectStockAudit(tc.strategy, audit, db)), tc.audit; got != want {
			t.Fatalf("%s: audit %s, want %s", tc.strategy, got, want)
		}
	}
}

func TestStrategyBadValueStopsServeInOneLine(t *testing.T) {
	bin := seckillBinary(t)
	out, err := runCmd(bin, append(os.Environ(), "SECKILL_REDIS_URL=redis://127.0.0.1:1/0",
		"SECKILL_DATABASE_URL=postgres://u@127.0.0.1:1/db", "SECKILL_STOCK_STRATEGY=bogus"), "serve")
	var exit *exec.ExitError
	if err == nil || !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("serve with a bad strategy: err %v, output %q", err, out)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 1 || !strings.Contains(out, "SECKILL_STOCK_STRATEGY") {
		t.Fatalf("want one line naming SECKILL_STOCK_STRATEGY, got %q", out)
	}
}

// TestStrategyServe runs serve with each alternative strategy through a sale's whole
// life: grabs with every answer, the order, a cancellation that puts the unit back,
// and reconciliation finding Redis and the database (or the database alone) agree.
func TestStrategyServe(t *testing.T) {
	for _, strategy := range []StockStrategy{StrategyWatch, StrategyPostgres} {
		t.Run(string(strategy), func(t *testing.T) {
			in := startInstance(t, "SECKILL_STOCK_STRATEGY="+string(strategy))
			id := in.createVoucher(2, 1)
			grab := func(user int64) (int, map[string]any) {
				return in.call(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", in.token(domain.UserID(user), false), nil)
			}
			status, first := grab(1)
			if got, want := status, http.StatusAccepted; got != want {
				t.Fatalf("grab: %d %v\n%s", got, first, in.logs)
			}
			order := first["order_id"].(string)
			if status, body := grab(1); status != http.StatusConflict || errorField(body, "code") != "already_purchased" || errorField(body, "order_id") != order {
				t.Fatalf("second grab: %d %v, want already_purchased naming %s", status, body, order)
			}
			if status, body := grab(2); status != http.StatusAccepted {
				t.Fatalf("grab by user 2: %d %v", status, body)
			}
			if status, body := grab(3); status != http.StatusConflict || errorField(body, "code") != "sold_out" {
				t.Fatalf("grab by user 3: %d %v, want sold_out", status, body)
			}

			// Persisted: at once under postgres, by the worker under watch.
			persisted := func() (bool, string) {
				status, o := in.call(http.MethodGet, "/api/v1/orders/"+order, in.token(1, false), nil)
				return status == http.StatusOK && o["status"] == "awaiting_payment", fmt.Sprintf("%d %v", status, o)
			}
			if strategy == StrategyPostgres {
				if ok, state := persisted(); !ok {
					t.Fatalf("order %s: %s, want awaiting_payment at once", order, state)
				}
			}
			testenv.Eventually(t, 30*time.Second, "order "+order+" persisted", persisted)
			wantStream := int64(2)
			if strategy == StrategyPostgres {
				wantStream = 0 // no Redis on the grab path
			}
			if got := in.streamLen(id); got != wantStream {
				t.Fatalf("stream length %d, want %d", got, wantStream)
			}

			// A cancellation puts the unit back; user 3 gets it once its sold-out flag
			// lapses (or the restock signal clears it).
			if status, o := in.call(http.MethodPost, "/api/v1/orders/"+order+"/cancel", in.token(1, false), nil); status != http.StatusOK || o["status"] != "cancelled" {
				t.Fatalf("cancel: %d %v", status, o)
			}
			testenv.Eventually(t, 30*time.Second, "user 3 grabs the unit put back", func() (bool, string) {
				status, body := grab(3)
				if status != http.StatusAccepted && errorField(body, "code") != "sold_out" {
					t.Fatalf("grab by user 3 after the cancellation: %d %v", status, body)
				}
				return status == http.StatusAccepted, fmt.Sprintf("%d %v", status, body)
			})
			testenv.Eventually(t, 30*time.Second, "stats settled", func() (bool, string) {
				status, s := in.call(http.MethodGet, "/api/v1/vouchers/"+id+"/stats", in.token(1, true), nil)
				return status == http.StatusOK && s["remaining"] == 0.0 && s["awaiting_payment"] == 2.0 && s["cancelled"] == 1.0 && s["queued"] == 0.0,
					fmt.Sprintf("%d %v", status, s)
			})

			out, err := runCmd(seckillBinary(t), in.env, "reconcile", "--voucher", id, "--json")
			if err != nil {
				t.Fatalf("reconcile: %v\n%s", err, out)
			}
			var rep struct {
				Vouchers []struct {
					Drifts []any `json:"drifts"`
				} `json:"vouchers"`
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("reconcile output: %v\n%s", err, out)
			}
			if len(rep.Vouchers) != 1 || len(rep.Vouchers[0].Drifts) != 0 {
				t.Fatalf("reconcile found drift: %s", out)
			}
		})
	}
}

// errorField returns a field of the error object of an answer.
func errorField(body map[string]any, key string) any {
	e, _ := body["error"].(map[string]any)
	return e[key]
}
