package load

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// StoreOrder is one order the service persisted, as its CSV export lists it.
type StoreOrder struct {
	ID       string
	User     int64
	Quantity int
	Status   string
}

// live reports whether the order holds its units (awaiting payment or paid).
func (o StoreOrder) live() bool { return o.Status == "awaiting_payment" || o.Status == "paid" }

// ErrNoOrders is the error of a sale whose persisted orders could not be read.
var ErrNoOrders = errors.New("orders not readable")

// VoucherOrders reads every persisted order of voucher, with an admin token, from
// GET /api/v1/vouchers/{id}/orders as CSV (the store's own list, streamed).
func VoucherOrders(ctx context.Context, base, voucher, adminToken string) ([]StoreOrder, error) {
	what := "orders of voucher " + voucher
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		strings.TrimRight(base, "/")+"/api/v1/vouchers/"+url.PathEscape(voucher)+"/orders", nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	req.Header.Set("Accept", "text/csv")
	req.Header.Set("Authorization", "Bearer "+adminToken)
	res, err := (&http.Client{}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, apiError(what, res)
	}
	return readOrders(res.Body, what)
}

// readOrders decodes the CSV export: a header naming order_id, user_id, quantity and
// status among its columns, then one order a row.
func readOrders(r io.Reader, what string) ([]StoreOrder, error) {
	rows := csv.NewReader(r)
	header, err := rows.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: header: %w", what, err)
	}
	col := map[string]int{}
	for i, name := range header {
		col[name] = i
	}
	for _, name := range []string{"order_id", "user_id", "quantity", "status"} {
		if _, ok := col[name]; !ok {
			return nil, fmt.Errorf("%s: no %s column in %v", what, name, header)
		}
	}
	var orders []StoreOrder
	for {
		rec, err := rows.Read()
		if errors.Is(err, io.EOF) {
			return orders, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		user, uerr := strconv.ParseInt(rec[col["user_id"]], 10, 64)
		qty, qerr := strconv.Atoi(rec[col["quantity"]])
		if uerr != nil || qerr != nil {
			return nil, fmt.Errorf("%s: row %v: bad user or quantity", what, rec)
		}
		orders = append(orders, StoreOrder{ID: rec[col["order_id"]], User: user, Quantity: qty, Status: rec[col["status"]]})
	}
}

// StoreCheck is the sale as the store holds it: the promises judged by the orders
// persisted, with the answers of the run to tell what became of each.
type StoreCheck struct {
	// Oversold is the units the voucher's live orders hold beyond its stock.
	Oversold int
	// Duplicates counts the users holding more than one live order of the voucher.
	Duplicates int
	// LostOrders counts this run's 202s whose order the store does not hold, or holds
	// as failed: grabs told they were taken, then taken back.
	LostOrders int
	// LostAcks counts the orders new since the run began that no 202 of this run named,
	// of users one of whose grabs got no answer: grabs that succeeded though the client
	// saw no answer (a timeout, a connection the service dropped, a kill).
	LostAcks int
	// Others counts the orders new since the run began that no 202 of this run named
	// and no lost acknowledgement explains: another client's.
	Others int
}

// CheckStore judges the orders the store holds after a run (after) against the
// voucher's stock, the orders it held before the run (before), and the run's answers.
func CheckStore(stock int, before map[string]bool, after []StoreOrder, r Result) StoreCheck {
	var c StoreCheck
	held := map[string]StoreOrder{}
	liveOf := map[int64]int{}
	units := 0
	for _, o := range after {
		held[o.ID] = o
		if o.live() {
			units += o.Quantity
			liveOf[o.User]++
		}
	}
	c.Oversold = max(0, units-stock)
	for _, n := range liveOf {
		if n > 1 {
			c.Duplicates++
		}
	}
	named := map[string]bool{}
	for _, res := range r.Reservations {
		if named[res.OrderID] {
			continue
		}
		named[res.OrderID] = true
		if o, ok := held[res.OrderID]; !ok || o.Status == "failed" {
			c.LostOrders++
		}
	}
	unanswered := map[int64]bool{}
	for _, u := range r.Unanswered {
		unanswered[u] = true
	}
	for _, o := range after {
		switch {
		case before[o.ID] || named[o.ID]:
		case unanswered[o.User]:
			c.LostAcks++
		default:
			c.Others++
		}
	}
	return c
}
