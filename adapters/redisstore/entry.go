package redisstore

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// maxOrderIDLen bounds an order id read from a stream entry. The application mints
// 26-character ULIDs; the bound leaves room for the ids tests and tools write, and
// keeps a hostile entry from carrying a megabyte into the database.
const maxOrderIDLen = 64

// plausibleOrderID reports whether s can be an order id: 1 to maxOrderIDLen
// printable ASCII characters, no space. A NUL, say, would make PostgreSQL refuse the
// whole batch the entry came in.
func plausibleOrderID(s string) bool {
	if s == "" || len(s) > maxOrderIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// decodeEntry turns a stream entry of voucher into a Delivery. The first field missing
// or malformed is named in Malformed.
func decodeEntry(voucher domain.VoucherID, m redis.XMessage) ports.Delivery {
	d := ports.Delivery{ID: m.ID, VoucherID: voucher}
	r, err := decodeFields(voucher, m.Values)
	if err != nil {
		d.Malformed = err.Error()
		return d
	}
	d.Reservation = r
	d.TraceParent, _ = m.Values[traceField].(string)
	return d
}

func decodeFields(voucher domain.VoucherID, values map[string]any) (domain.Reservation, error) {
	field := func(name string) (string, error) {
		v, ok := values[name]
		if !ok {
			return "", fmt.Errorf("field %q: missing", name)
		}
		s, ok := v.(string)
		if !ok || s == "" {
			return "", fmt.Errorf("field %q: empty", name)
		}
		return s, nil
	}
	positive := func(name string) (int64, error) {
		s, err := field(name)
		if err != nil {
			return 0, err
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 || strings.HasPrefix(s, "+") {
			return 0, fmt.Errorf("field %q: not a positive integer", name)
		}
		return n, nil
	}

	order, err := field("order")
	if err != nil {
		return domain.Reservation{}, err
	}
	if !plausibleOrderID(order) {
		return domain.Reservation{}, fmt.Errorf("field %q: not an order id", "order")
	}
	v, err := positive("voucher")
	if err != nil {
		return domain.Reservation{}, err
	}
	if domain.VoucherID(v) != voucher {
		return domain.Reservation{}, fmt.Errorf("field %q: names voucher %d in the stream of voucher %d", "voucher", v, voucher)
	}
	user, err := positive("user")
	if err != nil {
		return domain.Reservation{}, err
	}
	qty, err := positive("qty")
	if err != nil {
		return domain.Reservation{}, err
	}
	if qty > domain.MaxQuantity {
		return domain.Reservation{}, fmt.Errorf("field %q: above %d", "qty", domain.MaxQuantity)
	}
	at, err := positive("at")
	if err != nil {
		return domain.Reservation{}, fmt.Errorf("field %q: not a Unix time in milliseconds", "at")
	}
	return domain.Reservation{
		OrderID:   domain.OrderID(order),
		VoucherID: voucher,
		UserID:    domain.UserID(user),
		Quantity:  int(qty),
		At:        time.UnixMilli(at).UTC(),
	}, nil
}
