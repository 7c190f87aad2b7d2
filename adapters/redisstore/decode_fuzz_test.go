package redisstore

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/domain"
)

// FuzzDecodeEntry feeds the stream-entry decoder every shape of entry a broken or
// hostile writer could leave in a voucher's stream (fields missing, of another type,
// out of range; the one field of the current shape joining the values with colons,
// or the five of the earlier shape) and holds it to its contract: never a panic; either the entry is
// named malformed, or it is a reservation the database can store — a printable
// order id of bounded length, the stream's own voucher, a positive user, a quantity
// within the bounds.
func FuzzDecodeEntry(f *testing.F) {
	f.Add("01ARZ3NDEKTSV4RRFFQ69G5FAV", "7", "42", "1", "1764500000000", uint8(0))
	f.Add("01ARZ3NDEKTSV4RRFFQ69G5FAV", "8", "42", "1", "1764500000000", uint8(0))
	f.Add("x\x00", "7", "+42", "0", "-1", uint8(0))
	f.Add("01ARZ3NDEKTSV4RRFFQ69G5FAV", "7", "42", "1001", "1", uint8(1<<3))
	f.Add("", "", "", "", "", uint8(0xff))
	f.Add("01ARZ3NDEKTSV4RRFFQ69G5FAV", "7", "42", "1", "1764500000000", uint8(1<<6))
	f.Add("a:b", "7", "42:1", "1", "1764500000000", uint8(1<<6))
	f.Fuzz(func(t *testing.T, order, voucher, user, qty, at string, shape uint8) {
		const stream = domain.VoucherID(7)
		values := map[string]any{"order": order, "voucher": voucher, "user": user, "qty": qty, "at": at}
		// Each bit of shape removes one field, or (bit 5) makes the order a number,
		// as a writer other than the grab script might.
		for i, name := range []string{"order", "voucher", "user", "qty", "at"} {
			if shape&(1<<i) != 0 {
				delete(values, name)
			}
		}
		if shape&(1<<5) != 0 {
			values["order"] = int64(len(order))
		}
		// Bit 6: the current shape, one field "user:qty:at:order" (voucher unused).
		if shape&(1<<6) != 0 {
			values = map[string]any{"r": user + ":" + qty + ":" + at + ":" + order}
		}
		d := decodeEntry(stream, redis.XMessage{ID: "1-1", Values: values})
		if d.ID != "1-1" || d.VoucherID != stream {
			t.Fatalf("delivery %+v lost its id or voucher", d)
		}
		if d.Malformed != "" {
			return
		}
		r := d.Reservation
		if !plausibleOrderID(string(r.OrderID)) || strings.ContainsRune(string(r.OrderID), 0) {
			t.Fatalf("accepted order id %q", r.OrderID)
		}
		if r.VoucherID != stream || r.UserID <= 0 || r.Quantity < 1 || r.Quantity > domain.MaxQuantity || r.At.IsZero() {
			t.Fatalf("accepted %+v from %v", r, values)
		}
	})
}
