package httpapi

import (
	"encoding/csv"
	"errors"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
)

// voucherOrdersRoute lists a voucher's orders, or exports them as CSV.
const voucherOrdersRoute = "/api/v1/vouchers/:id/orders"

// csvHeader is the export's first line, the contract's columns.
var csvHeader = []string{"order_id", "voucher_id", "user_id", "quantity", "status", "created_at"}

// voucherOrders answers a voucher's persisted orders to an admin: a page of JSON, or,
// when the client asks for text/csv (wantsCSV), every matching order as CSV, streamed.
func (h handlers) voucherOrders(c echo.Context) error {
	id, err := domain.ParseVoucherID(c.Param("id"))
	if err != nil {
		return err
	}
	// strictQuery has refused a repeated parameter; a status given, even empty, must
	// be a persisted order's.
	q := application.VoucherOrdersQuery{Voucher: id}
	if s, given := c.QueryParams()["status"]; given {
		if s[0] == "" {
			return domain.Invalid("status", "must be awaiting_payment, paid, cancelled, expired or failed")
		}
		q.Status = s[0]
	}
	if wantsCSV(c.Request()) {
		return h.exportVoucherOrders(c, q)
	}
	if q.Limit, q.Cursor, err = pageParams(c); err != nil {
		return err
	}
	page, err := h.uc.ListVoucherOrders.Handle(c.Request().Context(), q)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, h.orderList(page))
}

// exportVoucherOrders streams every order q selects as CSV: the header line, then each
// page as the use case reads it from the database, written and flushed before the
// next is read, so the process holds one page whatever the export's size, and a slow
// client holds no database connection while it reads. Everything that can be refused
// is refused before the first byte. A read that fails after the answer has begun
// cannot change its status: the response is cut off (errStreamBroken), so the client
// sees a transfer that did not end, never a short file that looks whole.
func (h handlers) exportVoucherOrders(c echo.Context, q application.VoucherOrdersQuery) error {
	params := c.QueryParams()
	for _, name := range []string{"limit", "cursor"} {
		if _, given := params[name]; given {
			return domain.Invalid(name, "is not taken with Accept: text/csv: the export holds every matching order")
		}
	}
	ctx := c.Request().Context()
	pages, err := h.uc.ExportVoucherOrders.Handle(ctx, q)
	if err != nil {
		return err
	}
	res := c.Response()
	res.Header().Set(echo.HeaderContentType, "text/csv; charset=utf-8")
	res.Header().Set(echo.HeaderContentDisposition, `attachment; filename="voucher-`+q.Voucher.String()+`-orders.csv"`)
	res.Header().Set("Cache-Control", "no-store")
	res.WriteHeader(http.StatusOK)
	w := csv.NewWriter(res)
	w.UseCRLF = true // RFC 4180: records end in CRLF
	// The header line goes at once: the download starts before the first read.
	if err := w.Write(csvHeader); err != nil {
		return h.streamBroken(c, err)
	}
	if err := flush(w, res); err != nil {
		return h.streamBroken(c, err)
	}
	record := make([]string, len(csvHeader))
	for page, err := range pages {
		if err != nil {
			return h.streamBroken(c, err)
		}
		for _, o := range page {
			record[0], record[1], record[2] = string(o.ID), o.VoucherID.String(), o.UserID.String()
			record[3], record[4] = strconv.Itoa(o.Quantity), string(o.Status)
			record[5] = formatStamp(o.CreatedAt) // as the JSON spells it
			if err := w.Write(record); err != nil {
				return h.streamBroken(c, err)
			}
		}
		if err := flush(w, res); err != nil {
			return h.streamBroken(c, err)
		}
	}
	return nil
}

// flush sends what w holds to the client now.
func flush(w *csv.Writer, res *echo.Response) error {
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	res.Flush()
	return nil
}

// errStreamBroken ends a streamed answer that failed after it began: the outermost
// middleware (Metrics.observe) records the request, then aborts the response
// (http.ErrAbortHandler) so it is not ended as if whole.
var errStreamBroken = errors.New("streamed answer broken off")

// streamBroken logs why a streamed answer failed — a client that left is no failure
// of ours — and returns errStreamBroken.
func (h handlers) streamBroken(c echo.Context, err error) error {
	if cancelledByClient(c, err) {
		h.log.Debug("export cancelled by the client", zap.Error(err), zap.String("path", c.Path()))
	} else {
		h.log.Warn("export broken off", zap.Error(err), zap.String("path", c.Path()), zap.String("request_id", requestID(c)))
	}
	return errStreamBroken
}

// wantsCSV reports whether r asks for text/csv: its Accept header names text/csv with
// a quality above 0 and no lower than that of application/json. Anything else —
// no Accept, */*, JSON preferred — is answered JSON.
func wantsCSV(r *http.Request) bool {
	accept := r.Header.Get(echo.HeaderAccept)
	if accept == "" {
		return false
	}
	csvQ, jsonQ := 0.0, 0.0
	for part := range strings.SplitSeq(accept, ",") {
		media, params, err := mime.ParseMediaType(part)
		if err != nil {
			continue
		}
		q := 1.0
		if s, ok := params["q"]; ok {
			if q, err = strconv.ParseFloat(s, 64); err != nil {
				continue
			}
		}
		switch media {
		case "text/csv":
			csvQ = max(csvQ, q)
		case echo.MIMEApplicationJSON:
			jsonQ = max(jsonQ, q)
		}
	}
	return csvQ > 0 && csvQ >= jsonQ
}
