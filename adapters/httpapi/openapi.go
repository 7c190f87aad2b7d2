package httpapi

import (
	_ "embed"
	"net/http"

	"github.com/labstack/echo/v4"
)

// OpenAPI is the OpenAPI 3 document of the API: every route, body, response and error
// code. The tests hold the router and the answers to it.
//
//go:embed openapi.json
var OpenAPI []byte

// openAPIDocument serves OpenAPI.
func openAPIDocument(c echo.Context) error {
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, OpenAPI)
}
