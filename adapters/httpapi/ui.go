package httpapi

import (
	"embed"
	"io/fs"
	"mime"
	"net/http"
	"path"

	"github.com/labstack/echo/v4"
)

// uiFiles are the live sale page: plain HTML, JavaScript and CSS, served as they are.
//
//go:embed ui
var uiFiles embed.FS

// uiPage serves the page's files at /ui/ (index.html) and /ui/{asset}; anything else
// under /ui/ is not found.
func uiPage(c echo.Context) error {
	name := c.Param("*")
	if name == "" {
		name = "index.html"
	}
	// The files are embedded: a name that cannot be read (missing, a directory) is
	// simply not one of them.
	b, err := fs.ReadFile(uiFiles, path.Join("ui", path.Clean("/"+name)))
	if err != nil {
		return echo.ErrNotFound
	}
	ctype := mime.TypeByExtension(path.Ext(name))
	if ctype == "" {
		ctype = echo.MIMEOctetStream
	}
	// The page is small and changes with the binary: always revalidate.
	c.Response().Header().Set("Cache-Control", "no-cache")
	return c.Blob(http.StatusOK, ctype, b)
}

// uiRedirect sends /ui to /ui/, where the page's relative links resolve.
func uiRedirect(c echo.Context) error {
	return c.Redirect(http.StatusMovedPermanently, "/ui/")
}

// rootRedirect sends the site's root to the live sale page. The redirect is temporary
// (302): a browser does not keep it, so the root stays free to serve something else.
func rootRedirect(c echo.Context) error {
	return c.Redirect(http.StatusFound, "/ui/")
}
