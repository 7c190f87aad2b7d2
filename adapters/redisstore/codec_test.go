package redisstore

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// asRead turns XADD's field/value list into the map XRANGE answers, holding each value
// as Redis gives it back: a string.
func asRead(t *testing.T, values []any) map[string]any {
	t.Helper()
	if len(values)%2 != 0 {
		t.Fatalf("odd field list %v", values)
	}
	m := make(map[string]any, len(values)/2)
	for i := 0; i < len(values); i += 2 {
		name, ok1 := values[i].(string)
		v, ok2 := values[i+1].(string)
		if !ok1 || !ok2 {
			t.Fatalf("field %v = %v (%T): want strings", values[i], values[i+1], values[i+1])
		}
		if _, dup := m[name]; dup {
			t.Fatalf("field %q written twice in %v", name, values)
		}
		m[name] = v
	}
	return m
}

func TestCodecRoundTrip(t *testing.T) {
	// Sub-millisecond and in another zone: the codec keeps Unix milliseconds, in UTC.
	at := time.Date(2026, 11, 30, 23, 1, 2, 345678901, time.FixedZone("UTC+8", 8*3600))
	for _, r := range []domain.Reservation{
		{OrderID: "01ARZ3NDEKTSV4RRFFQ69G5FAV", VoucherID: 7, UserID: 42, Quantity: 1, At: at},
		{OrderID: "o-1", VoucherID: 1, UserID: 1, Quantity: domain.MaxQuantity, At: time.UnixMilli(1)},
		{OrderID: domain.OrderID(strings.Repeat("~", maxOrderIDLen)), VoucherID: 1<<63 - 1, UserID: 1<<63 - 1, Quantity: 3, At: at},
		// With the deadline it was taken with, kept to the millisecond in UTC too.
		{OrderID: "01ARZ3NDEKTSV4RRFFQ69G5FAV", VoucherID: 7, UserID: 42, Quantity: 1, At: at, Expires: at.Add(15*time.Minute + time.Microsecond)},
		{OrderID: "a:b", VoucherID: 7, UserID: 42, Quantity: 2, At: at, Expires: at.Add(time.Second)},
	} {
		want := r
		want.At = time.UnixMilli(r.At.UnixMilli()).UTC()
		if !r.Expires.IsZero() {
			want.Expires = time.UnixMilli(r.Expires.UnixMilli()).UTC()
		}
		for _, tp := range []string{"", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"} {
			values := asRead(t, entryValues(r, tp))
			if _, ok := values[traceField]; ok != (tp != "") {
				t.Fatalf("traceparent %q: entry %v", tp, values)
			}
			got := decodeEntry(r.VoucherID, redis.XMessage{ID: "5-1", Values: values})
			if w := (ports.Delivery{ID: "5-1", VoucherID: r.VoucherID, Reservation: want, TraceParent: tp}); !reflect.DeepEqual(got, w) {
				t.Fatalf("entry of %+v decodes to %+v, want %+v", r, got, w)
			}
		}
		got, err := decodeRecord(r.OrderID, r.VoucherID, encodeRecord(r))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("record of %+v decodes to %+v, %v; want %+v", r, got, err, want)
		}
	}
}

// TestCodecReadsEntriesOfTheEarlierShape: an entry written with one field per value,
// as before the one-field shape (still queued across an upgrade, or appended by an
// older instance), reads as the same reservation.
func TestCodecReadsEntriesOfTheEarlierShape(t *testing.T) {
	r := domain.Reservation{OrderID: "01ARZ3NDEKTSV4RRFFQ69G5FAV", VoucherID: 7, UserID: 42, Quantity: 2, At: time.UnixMilli(1764500000000).UTC()}
	earlier := map[string]any{"order": "01ARZ3NDEKTSV4RRFFQ69G5FAV", "voucher": "7", "user": "42", "qty": "2", "at": "1764500000000",
		"tp": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	got := decodeEntry(7, redis.XMessage{ID: "5-1", Values: earlier})
	want := decodeEntry(7, redis.XMessage{ID: "5-1", Values: asRead(t, entryValues(r, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))})
	if !reflect.DeepEqual(got, want) || got.Malformed != "" || got.Reservation != r {
		t.Fatalf("the earlier shape reads %+v, the current %+v; want both %+v", got, want, r)
	}
}

// TestCodecRefusesMalformedReservations: an entry's one field that is not
// user:qty:at:order, each a valid value, names the field and yields no reservation.
func TestCodecRefusesMalformedReservations(t *testing.T) {
	for _, v := range []any{
		"", "42:2:1764500000000", "42:2", "0:2:1764500000000:o-1", "+42:2:1764500000000:o-1", "x:2:1764500000000:o-1",
		"42:0:1764500000000:o-1", "42:1001:1764500000000:o-1", "42:1e2:1764500000000:o-1", "42:2:0:o-1", "42:2:now:o-1",
		"42:2:1764500000000:", "42:2:1764500000000:a b", "42:2:1764500000000:x\x00", int64(5),
	} {
		d := decodeEntry(7, redis.XMessage{ID: "5-1", Values: map[string]any{"r": v}})
		if !strings.Contains(d.Malformed, `"r"`) || d.Reservation != (domain.Reservation{}) || d.ID != "5-1" || d.VoucherID != 7 {
			t.Errorf("r = %#v: delivery %+v; want the field named and no reservation", v, d)
		}
	}
}

func TestCodecRefusesMalformedEntries(t *testing.T) {
	const stream = domain.VoucherID(7)
	good := func() map[string]any {
		return map[string]any{"order": "01ARZ3NDEKTSV4RRFFQ69G5FAV", "voucher": "7", "user": "42", "qty": "2", "at": "1764500000000"}
	}
	type change struct {
		field string
		value any // nil: the field is missing
	}
	for _, c := range []change{
		{"order", nil}, {"order", ""}, {"order", "a b"}, {"order", "x\x00"}, {"order", strings.Repeat("x", maxOrderIDLen+1)}, {"order", int64(5)},
		{"voucher", nil}, {"voucher", "8"}, {"voucher", "0"}, {"voucher", "+7"}, {"voucher", "seven"},
		{"user", nil}, {"user", "0"}, {"user", "-1"}, {"user", "4.2"},
		{"qty", nil}, {"qty", "0"}, {"qty", strconv.Itoa(domain.MaxQuantity + 1)}, {"qty", "1e2"},
		{"at", nil}, {"at", "0"}, {"at", "-5"}, {"at", "now"},
	} {
		values := good()
		if c.value == nil {
			delete(values, c.field)
		} else {
			values[c.field] = c.value
		}
		d := decodeEntry(stream, redis.XMessage{ID: "5-1", Values: values})
		if !strings.Contains(d.Malformed, strconv.Quote(c.field)) || d.Reservation != (domain.Reservation{}) {
			t.Errorf("field %s = %#v: Malformed %q, reservation %+v; want the field named and no reservation", c.field, c.value, d.Malformed, d.Reservation)
		}
		if d.ID != "5-1" || d.VoucherID != stream {
			t.Errorf("field %s = %#v: delivery %+v lost its id or voucher", c.field, c.value, d)
		}
	}
	if d := decodeEntry(stream, redis.XMessage{ID: "5-1", Values: good()}); d.Malformed != "" {
		t.Fatalf("the good entry is malformed: %s", d.Malformed)
	}
}

// TestCodecReadsTheDeadlineBesideTheReservation: an entry's deadline is a field of its
// own ("x"), so one without it (written before deadlines were recorded) reads with
// none, and a malformed one names its field and yields no reservation.
func TestCodecReadsTheDeadlineBesideTheReservation(t *testing.T) {
	const r = "42:2:1764500000000:o-1"
	d := decodeEntry(7, redis.XMessage{ID: "5-1", Values: map[string]any{"r": r}})
	if d.Malformed != "" || !d.Reservation.Expires.IsZero() || d.Reservation.At != time.UnixMilli(1764500000000).UTC() {
		t.Fatalf("an entry without a deadline: %+v", d)
	}
	d = decodeEntry(7, redis.XMessage{ID: "5-1", Values: map[string]any{"r": r, "x": "1764500900000"}})
	if d.Malformed != "" || d.Reservation.Expires != time.UnixMilli(1764500900000).UTC() {
		t.Fatalf("an entry with a deadline: %+v", d)
	}
	for _, x := range []any{"", "0", "-5", "+5", "soon", "1.5", int64(5)} {
		d := decodeEntry(7, redis.XMessage{ID: "5-1", Values: map[string]any{"r": r, "x": x}})
		if !strings.Contains(d.Malformed, `"x"`) || d.Reservation != (domain.Reservation{}) {
			t.Errorf("x = %#v: delivery %+v; want the field named and no reservation", x, d)
		}
	}
}

func TestCodecRefusesMalformedRecords(t *testing.T) {
	for _, record := range []string{
		"", "42", "42:1", "42:1:2:3:4", "42::1", ":1:1", "x:1:1", "0:1:1", "-1:1:1",
		"42:0:1", "42:-1:1", "42:x:1", "42:1:", "42:1:x", "42:1:1.5",
		"42:1:2:", "42:1:2:x", "42:1:2:0", "42:1:2:-3", "42:1:2:+3",
	} {
		if r, err := decodeRecord("o-1", 7, record); err == nil {
			t.Errorf("record %q decodes to %+v, want an error", record, r)
		}
	}
}
