package application

import (
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// The sizes of a page of a list (vouchers, a user's orders).
const (
	// DefaultPageLimit is the page size when none is asked for.
	DefaultPageLimit = 50
	// MaxPageLimit is the largest page size that may be asked for.
	MaxPageLimit = 200
)

// pageLimit returns the page size asked for: limit, or DefaultPageLimit for 0. Any
// other value outside 1..MaxPageLimit returns a *domain.ValidationError.
func pageLimit(limit int) (int, error) {
	switch {
	case limit == 0:
		return DefaultPageLimit, nil
	case limit < 1 || limit > MaxPageLimit:
		return 0, domain.Invalid("limit", "must be an integer from 1 to "+strconv.Itoa(MaxPageLimit))
	}
	return limit, nil
}

// A cursor is opaque to clients: the base64url (unpadded) of the list it belongs to,
// the filter it was made under, and the sort key of the page's last item —
// "v|<status>|<voucher id>" for vouchers, "o|<voucher id or 0>|<created_at in Unix
// nanoseconds>|<order id>" for a user's orders, "vo|<voucher id>|<status>|<order id>"
// for a voucher's orders, "a|<voucher id or 0>|<entry id>" for the audit log,
// "d|<status>|<delivery id>" for the webhook deliveries, "u|<user id>" for the deny list. Naming
// the list and its filter lets a cursor
// of another list, or of the same list under another filter, be refused rather than
// silently skip or repeat items. A cursor is accepted only in its canonical form (it
// decodes and encodes back to the same text), so a tampered one is refused too.
const (
	voucherCursorKind       = "v"
	orderCursorKind         = "o"
	voucherOrdersCursorKind = "vo"
	auditCursorKind         = "a"
	deliveryCursorKind      = "d"
	denialCursorKind        = "u"
)

var errBadCursor = domain.Invalid("cursor", "is not a cursor of this list: pass next_cursor of the previous page as it is")

func encodeCursor(fields ...string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strings.Join(fields, "|")))
}

// decodeCursor returns the fields of cursor after its kind, which must be kind, and
// must number n.
func decodeCursor(cursor, kind string, n int) ([]string, error) {
	raw, err := base64.RawURLEncoding.Strict().DecodeString(cursor)
	if err != nil {
		return nil, errBadCursor
	}
	fields := strings.Split(string(raw), "|")
	if len(fields) != n+1 || fields[0] != kind {
		return nil, errBadCursor
	}
	return fields[1:], nil
}

// encodeVoucherCursor returns the cursor of the page after the voucher last, listed
// under status.
func encodeVoucherCursor(status ports.SaleStatus, last domain.VoucherID) string {
	return encodeCursor(voucherCursorKind, string(status), last.String())
}

// decodeVoucherCursor returns the last voucher id of the page before, for a list
// under status, or errBadCursor.
func decodeVoucherCursor(cursor string, status ports.SaleStatus) (domain.VoucherID, error) {
	f, err := decodeCursor(cursor, voucherCursorKind, 2)
	if err != nil {
		return 0, err
	}
	id, err := domain.ParseVoucherID(f[1])
	if err != nil || f[0] != string(status) || encodeVoucherCursor(status, id) != cursor {
		return 0, errBadCursor
	}
	return id, nil
}

// encodeOrderCursor returns the cursor of the page after the order whose key is last,
// listed with the voucher filter voucher (0: none).
func encodeOrderCursor(voucher domain.VoucherID, last ports.OrderKey) string {
	return encodeCursor(orderCursorKind, strconv.FormatInt(int64(voucher), 10),
		strconv.FormatInt(last.CreatedAt.UnixNano(), 10), string(last.ID))
}

// decodeOrderCursor returns the key of the last order of the page before, for a list
// with the voucher filter voucher, or errBadCursor.
func decodeOrderCursor(cursor string, voucher domain.VoucherID) (ports.OrderKey, error) {
	f, err := decodeCursor(cursor, orderCursorKind, 3)
	if err != nil {
		return ports.OrderKey{}, err
	}
	nanos, err1 := strconv.ParseInt(f[1], 10, 64)
	id := domain.OrderID(f[2])
	if err1 != nil || !plainID(f[2]) || f[0] != strconv.FormatInt(int64(voucher), 10) {
		return ports.OrderKey{}, errBadCursor
	}
	key := ports.OrderKey{CreatedAt: time.Unix(0, nanos).UTC(), ID: id}
	if encodeOrderCursor(voucher, key) != cursor {
		return ports.OrderKey{}, errBadCursor
	}
	return key, nil
}

// encodeAuditCursor returns the cursor of the page after the entry last, listed with
// the voucher filter voucher (0: none).
func encodeAuditCursor(voucher domain.VoucherID, last int64) string {
	return encodeCursor(auditCursorKind, strconv.FormatInt(int64(voucher), 10), strconv.FormatInt(last, 10))
}

// decodeAuditCursor returns the id of the last entry of the page before, for a list
// with the voucher filter voucher, or errBadCursor.
func decodeAuditCursor(cursor string, voucher domain.VoucherID) (int64, error) {
	f, err := decodeCursor(cursor, auditCursorKind, 2)
	if err != nil {
		return 0, err
	}
	last, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil || last < 1 || encodeAuditCursor(voucher, last) != cursor {
		return 0, errBadCursor
	}
	return last, nil
}

// encodeDenialCursor returns the cursor of the deny list's page after user last.
func encodeDenialCursor(last domain.UserID) string {
	return encodeCursor(denialCursorKind, last.String())
}

// decodeDenialCursor returns the last user of the page before, or errBadCursor.
func decodeDenialCursor(cursor string) (domain.UserID, error) {
	f, err := decodeCursor(cursor, denialCursorKind, 1)
	if err != nil {
		return 0, err
	}
	last, err := domain.ParseUserID(f[0])
	if err != nil || encodeDenialCursor(last) != cursor {
		return 0, errBadCursor
	}
	return last, nil
}

// plainID reports whether s may be an order id in a cursor: 1 to 64 ASCII letters and
// digits. Order ids are ULIDs; refusing anything else keeps a crafted cursor's bytes
// (a NUL, a quote) away from the database.
func plainID(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}

// encodeVoucherOrdersCursor returns the cursor of the page after the order last of
// voucher's orders, listed under status (empty: all).
func encodeVoucherOrdersCursor(voucher domain.VoucherID, status domain.OrderStatus, last domain.OrderID) string {
	return encodeCursor(voucherOrdersCursorKind, voucher.String(), string(status), string(last))
}

// decodeVoucherOrdersCursor returns the last order id of the page before, for the
// list of voucher's orders under status, or errBadCursor.
func decodeVoucherOrdersCursor(cursor string, voucher domain.VoucherID, status domain.OrderStatus) (domain.OrderID, error) {
	f, err := decodeCursor(cursor, voucherOrdersCursorKind, 3)
	if err != nil {
		return "", err
	}
	last := domain.OrderID(f[2])
	if !plainID(f[2]) || encodeVoucherOrdersCursor(voucher, status, last) != cursor {
		return "", errBadCursor
	}
	return last, nil
}

// encodeDeliveryCursor returns the cursor of the page after the delivery last,
// listed under status.
func encodeDeliveryCursor(status domain.DeliveryStatus, last string) string {
	return encodeCursor(deliveryCursorKind, string(status), last)
}

// decodeDeliveryCursor returns the id of the last delivery of the page before, for a
// list under status, or errBadCursor.
func decodeDeliveryCursor(cursor string, status domain.DeliveryStatus) (string, error) {
	f, err := decodeCursor(cursor, deliveryCursorKind, 2)
	if err != nil {
		return "", err
	}
	if !plainID(f[1]) || encodeDeliveryCursor(status, f[1]) != cursor {
		return "", errBadCursor
	}
	return f[1], nil
}
