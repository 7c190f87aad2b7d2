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

// The fields of a stream entry, one reservation each: the reservation in one field,
// its record followed by the order id ("user_id:qty:at_ms:order_id"; the voucher is
// the stream's), its payment deadline, and the grab's W3C traceparent when it was
// traced. One field for the reservation, not one per value: each field costs Redis on
// every XADD, on the worker's XREADGROUP and in the append-only file, and the worker a
// map entry to decode.
const (
	reservationField = "r"
	// expiresField holds the reservation's payment deadline, Unix ms
	// (domain.Reservation.Expires); absent from an entry written before deadlines
	// were recorded. A field of its own, not a part of "r": an order id may hold a
	// colon, so "r" could not tell a fifth part from the order's, and an older
	// instance reading "r" beside newer ones reads it as before.
	expiresField = "x"
	// traceField holds the grab's W3C traceparent; absent when the grab was untraced.
	traceField = "tp"
)

// The fields of an entry as written before the one-field shape: an entry still queued
// when the service is upgraded, or appended by an older instance beside newer ones,
// is read the same.
const (
	orderField   = "order"   // the order id
	voucherField = "voucher" // the voucher id, decimal: the stream's own
	userField    = "user"    // the user id, decimal
	qtyField     = "qty"     // the units, decimal
	atField      = "at"      // when the grab was judged, Unix ms
)

// entryValues returns the fields of r's stream entry, for XADD: the reservation, its
// deadline when it has one, and tp when tp is not "".
func entryValues(r domain.Reservation, tp string) []any {
	values := []any{reservationField, recordBase(r) + ":" + string(r.OrderID)}
	if !r.Expires.IsZero() {
		values = append(values, expiresField, strconv.FormatInt(r.Expires.UnixMilli(), 10))
	}
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

// decodeExpires reads the deadline field of a stream entry into r.Expires; an entry
// without one leaves it zero.
func decodeExpires(values map[string]any, r domain.Reservation) (domain.Reservation, error) {
	v, ok := values[expiresField]
	if !ok {
		return r, nil
	}
	s, _ := v.(string)
	ms, ok := positive(s)
	if !ok {
		return domain.Reservation{}, fmt.Errorf("field %q: not a Unix time in milliseconds", expiresField)
	}
	r.Expires = time.UnixMilli(ms).UTC()
	return r, nil
}

// decodeFields reads the fields of a stream entry of voucher, as entryValues writes
// them (with or without the deadline) or as they were written before (the five
// fields order, voucher, user, qty and at); it names the first field missing or
// malformed.
func decodeFields(voucher domain.VoucherID, values map[string]any) (domain.Reservation, error) {
	if v, ok := values[reservationField]; ok {
		s, _ := v.(string)
		parts := strings.SplitN(s, ":", 4)
		if len(parts) != 4 {
			return domain.Reservation{}, fmt.Errorf("field %q: not user:qty:at:order", reservationField)
		}
		r, err := reservation(voucher, parts[3], parts[0], parts[1], parts[2], func(name string) string {
			return fmt.Sprintf("field %q: %s", reservationField, name)
		})
		if err != nil {
			return domain.Reservation{}, err
		}
		return decodeExpires(values, r)
	}
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
	var got [5]string
	for i, name := range []string{orderField, voucherField, userField, qtyField, atField} {
		var err error
		if got[i], err = field(name); err != nil {
			return domain.Reservation{}, err
		}
		if name == voucherField {
			v, ok := positive(got[i])
			if !ok {
				return domain.Reservation{}, fmt.Errorf("field %q: not a positive integer", voucherField)
			}
			if domain.VoucherID(v) != voucher {
				return domain.Reservation{}, fmt.Errorf("field %q: names voucher %d in the stream of voucher %d", voucherField, v, voucher)
			}
		}
	}
	return reservation(voucher, got[0], got[2], got[3], got[4], func(name string) string {
		return fmt.Sprintf("field %q", name)
	})
}

// reservation checks and reads the values of a stream entry: order, user, qty, at;
// where names the part that is wrong in an error (user, qty, at or order).
func reservation(voucher domain.VoucherID, order, user, qty, at string, where func(name string) string) (domain.Reservation, error) {
	if !plausibleOrderID(order) {
		return domain.Reservation{}, fmt.Errorf("%s: not an order id", where(orderField))
	}
	u, ok := positive(user)
	if !ok {
		return domain.Reservation{}, fmt.Errorf("%s: not a positive integer", where(userField))
	}
	q, ok := positive(qty)
	if !ok {
		return domain.Reservation{}, fmt.Errorf("%s: not a positive integer", where(qtyField))
	}
	if q > domain.MaxQuantity {
		return domain.Reservation{}, fmt.Errorf("%s: above %d", where(qtyField), domain.MaxQuantity)
	}
	ms, ok := positive(at)
	if !ok {
		return domain.Reservation{}, fmt.Errorf("%s: not a Unix time in milliseconds", where(atField))
	}
	return domain.Reservation{
		OrderID:   domain.OrderID(order),
		VoucherID: voucher,
		UserID:    domain.UserID(u),
		Quantity:  int(q),
		At:        time.UnixMilli(ms).UTC(),
	}, nil
}

// positive reads a positive decimal integer: digits only, no sign.
func positive(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n > 0 && !strings.HasPrefix(s, "+")
}

// recordBase returns the first three parts of r's record, "user_id:qty:at_ms".
func recordBase(r domain.Reservation) string {
	return r.UserID.String() + ":" + strconv.Itoa(r.Quantity) + ":" + strconv.FormatInt(r.At.UnixMilli(), 10)
}

// encodeRecord returns r's record in the orders hash: "user_id:qty:at_ms", then
// ":expires_ms" when r has a deadline.
func encodeRecord(r domain.Reservation) string {
	if r.Expires.IsZero() {
		return recordBase(r)
	}
	return recordBase(r) + ":" + strconv.FormatInt(r.Expires.UnixMilli(), 10)
}

// decodeRecord reads an orders hash value, "user_id:qty:at_ms" or, with the
// reservation's deadline, "user_id:qty:at_ms:expires_ms".
func decodeRecord(id domain.OrderID, voucher domain.VoucherID, record string) (domain.Reservation, error) {
	parts := strings.Split(record, ":")
	if len(parts) == 3 || len(parts) == 4 {
		user, err1 := domain.ParseUserID(parts[0])
		qty, err2 := strconv.Atoi(parts[1])
		at, err3 := strconv.ParseInt(parts[2], 10, 64)
		var expires time.Time
		ok := true
		if len(parts) == 4 {
			var ms int64
			ms, ok = positive(parts[3])
			expires = time.UnixMilli(ms).UTC()
		}
		if err1 == nil && err2 == nil && err3 == nil && ok && qty > 0 {
			return domain.Reservation{
				OrderID:   id,
				VoucherID: voucher,
				UserID:    user,
				Quantity:  qty,
				At:        time.UnixMilli(at).UTC(),
				Expires:   expires,
			}, nil
		}
	}
	return domain.Reservation{}, fmt.Errorf("order %s of voucher %d: malformed record %q", id, voucher, record)
}
