package httpapi

import (
	"bufio"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
)

// The paths of a draw, under a voucher's path or a campaign's: POST …/entries enters
// it, GET …/draw reads its public record, GET …/draw/entrants its sorted entrants.
const (
	entriesPath      = "/entries"
	drawPath         = "/draw"
	drawEntrantsPath = "/draw/entrants"
)

// entryJSON answers an entry: the number of entrants so far.
type entryJSON struct {
	Entrants int `json:"entrants"`
}

// drawJSON is the contract's record of a draw. Before the draw only the commitment and
// the entrants so far are known: seed, entrants_digest and drawn_at are null, winners
// is empty. After it, winners lists the winning user ids (decimal strings), in the
// order of the shuffle.
type drawJSON struct {
	Commitment     string   `json:"commitment"`
	Seed           *string  `json:"seed"`
	Entrants       int      `json:"entrants"`
	EntrantsDigest *string  `json:"entrants_digest"`
	DrawnAt        *stamp   `json:"drawn_at"`
	Winners        []string `json:"winners"`
}

// dropEntryRequest is the body of a campaign's entry: the voucher chosen.
type dropEntryRequest struct {
	VoucherID *string `json:"voucher_id"`
}

// enterDraw enters the caller in a draw voucher and answers 202, again 202 for a user
// who entered already; a voucher with a challenge asks for a proof first
// (X-Seckill-Pow; refused with a fresh challenge, withChallenge). The body, when sent,
// is an empty object. A campaign's entry (…/campaigns/{id}/entries) names the voucher
// chosen, {"voucher_id"}; entering again changes the choice.
func (h handlers) enterDraw(c echo.Context) error {
	id, err := roomID(c)
	if err != nil {
		return err
	}
	cmd := application.EnterDrawCmd{VoucherID: id, UserID: principal(c).User, Proof: c.Request().Header.Get(PowHeader)}
	if _, drop := id.CampaignRoom(); !drop {
		var req struct{}
		if err := decodeJSON(c, &req, true); err != nil {
			return err
		}
	} else {
		var req dropEntryRequest
		if err := decodeJSON(c, &req, false); err != nil {
			return err
		}
		if req.VoucherID == nil {
			return domain.Invalid("voucher_id", "is required")
		}
		if cmd.Choice, err = domain.ParseVoucherID(*req.VoucherID); err != nil {
			return domain.Invalid("voucher_id", "must be the id of a voucher of this campaign")
		}
	}
	n, err := h.uc.EnterDraw.Handle(c.Request().Context(), cmd)
	if err != nil {
		return h.withChallenge(c, id, cmd.UserID, err)
	}
	return c.JSON(http.StatusAccepted, entryJSON{Entrants: n})
}

// getDraw answers a draw's public record, a voucher's or a campaign's.
func (h handlers) getDraw(c echo.Context) error {
	id, err := roomID(c)
	if err != nil {
		return err
	}
	st, err := h.uc.GetDraw.Handle(c.Request().Context(), id)
	if err != nil {
		return err
	}
	out := drawJSON{Commitment: st.Commitment, Entrants: st.Entrants, Winners: []string{}}
	if d := st.Draw; d != nil {
		seed, digest := domain.SeedHex(d.Seed), d.Digest
		out.Seed, out.EntrantsDigest, out.DrawnAt = &seed, &digest, optionalStamp(d.At)
		out.Winners = make([]string, len(st.Winners))
		for i, u := range st.Winners {
			out.Winners[i] = u.String()
		}
	}
	return c.JSON(http.StatusOK, out)
}

// drawEntrants answers a drawn voucher's entrants as text, sorted ascending, one
// decimal id per line, each ending in "\n": the bytes whose SHA-256 is the draw's
// entrants_digest; a campaign's, one "user_id,voucher_id" per line. Before the draw:
// 404 not_found.
func (h handlers) drawEntrants(c echo.Context) error {
	id, err := roomID(c)
	if err != nil {
		return err
	}
	st, err := h.uc.GetDraw.Handle(c.Request().Context(), id)
	if err != nil {
		return err
	}
	if st.Draw == nil {
		return domain.ErrNotFound
	}
	if drop := st.Draw.Drop; drop != nil {
		return writeLines(c, len(st.Draw.Entrants), func(buf []byte, i int) []byte {
			return domain.AppendDropEntrant(buf, st.Draw.Entrants[i], drop.Choices[i])
		})
	}
	return writeEntrants(c, st.Draw.Entrants)
}

// writeEntrants answers 200 with sorted, the entrants of a shuffle (a draw's or a
// waiting room's) sorted ascending, as text: one decimal id per line, each ending in
// "\n" — the bytes whose SHA-256 domain.EntrantsDigest returns.
func writeEntrants(c echo.Context, sorted []domain.UserID) error {
	return writeLines(c, len(sorted), func(buf []byte, i int) []byte {
		buf = strconv.AppendInt(buf, int64(sorted[i]), 10)
		return append(buf, '\n')
	})
}

// writeLines answers 200 with n lines of text, line i appended to a buffer by line.
func writeLines(c echo.Context, n int, line func(buf []byte, i int) []byte) error {
	res := c.Response()
	res.Header().Set(echo.HeaderContentType, "text/plain; charset=utf-8")
	res.WriteHeader(http.StatusOK)
	w := bufio.NewWriter(res)
	buf := make([]byte, 0, 48)
	for i := range n {
		buf = line(buf[:0], i)
		if _, err := w.Write(buf); err != nil {
			return nil //nolint:nilerr // the client went away: nothing left to answer
		}
	}
	_ = w.Flush() //nolint:errcheck // the client went away: nothing left to answer
	return nil
}
