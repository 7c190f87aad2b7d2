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

// The codec of what the grab path records, for every Go writer and reader: a stream
// entry (Keys.Stream) and a reservation record (Keys.Orders). reserve.lua writes both
// in the same shapes, and recount.lua reads a record's quantity.

// The fields of a stream entry, one reservation each.
const (
	orderField   = "order"   // the order id
	voucherField = "voucher" // the voucher id, decimal: the stream's own
	userField    = "user"    // the user id, decimal
	qtyField     = "qty"     // the units, decimal
	atField      = "at"      // when the grab was judged, Unix ms
	// traceField holds the grab's W3C traceparent; absent when the grab was untraced.
	traceField = "tp"
)

// entryValues returns the fields of r's stream entry, for XADD: order, voucher, user,
// qty, at, and tp when tp is not "".
func entryValues(r domain.Reservation, tp string) []any {
	values := []any{orderField, string(r.OrderID), voucherField, r.VoucherID.String(),
		userField, r.UserID.String(), qtyField, strconv.Itoa(r.Quantity), atField, strconv.FormatInt(r.At.UnixMilli(), 10)}
	if tp != "" {
		values = append(values, traceField, tp)
	}
	return values
}

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

// decodeFields reads the fields of a stream entry of voucher, as entryValues writes
// them; it names the first field missing or malformed.
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

	order, err := field(orderField)
	if err != nil {
		return domain.Reservation{}, err
	}
	if !plausibleOrderID(order) {
		return domain.Reservation{}, fmt.Errorf("field %q: not an order id", orderField)
	}
	v, err := positive(voucherField)
	if err != nil {
		return domain.Reservation{}, err
	}
	if domain.VoucherID(v) != voucher {
		return domain.Reservation{}, fmt.Errorf("field %q: names voucher %d in the stream of voucher %d", voucherField, v, voucher)
	}
	user, err := positive(userField)
	if err != nil {
		return domain.Reservation{}, err
	}
	qty, err := positive(qtyField)
	if err != nil {
		return domain.Reservation{}, err
	}
	if qty > domain.MaxQuantity {
		return domain.Reservation{}, fmt.Errorf("field %q: above %d", qtyField, domain.MaxQuantity)
	}
	at, err := positive(atField)
	if err != nil {
		return domain.Reservation{}, fmt.Errorf("field %q: not a Unix time in milliseconds", atField)
	}
	return domain.Reservation{
		OrderID:   domain.OrderID(order),
		VoucherID: voucher,
		UserID:    domain.UserID(user),
		Quantity:  int(qty),
		At:        time.UnixMilli(at).UTC(),
	}, nil
}

// encodeRecord returns r's record in the orders hash: "user_id:qty:at_ms".
func encodeRecord(r domain.Reservation) string {
	return r.UserID.String() + ":" + strconv.Itoa(r.Quantity) + ":" + strconv.FormatInt(r.At.UnixMilli(), 10)
}

// decodeRecord reads an orders hash value, "user_id:qty:at_ms".
func decodeRecord(id domain.OrderID, voucher domain.VoucherID, record string) (domain.Reservation, error) {
	parts := strings.Split(record, ":")
	if len(parts) == 3 {
		user, err1 := domain.ParseUserID(parts[0])
		qty, err2 := strconv.Atoi(parts[1])
		at, err3 := strconv.ParseInt(parts[2], 10, 64)
		if err1 == nil && err2 == nil && err3 == nil && qty > 0 {
			return domain.Reservation{
				OrderID:   id,
				VoucherID: voucher,
				UserID:    user,
				Quantity:  qty,
				At:        time.UnixMilli(at).UTC(),
			}, nil
		}
	}
	return domain.Reservation{}, fmt.Errorf("order %s of voucher %d: malformed record %q", id, voucher, record)
}
