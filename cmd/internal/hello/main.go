// Command hello is the baseline of the HTTP benchmarks: a bare Echo server that answers
// every POST (/hello, or a grab's path) with a small JSON body. The benchmarks drive it
// with the same client and on the same machine as seckill, so the ratio between the two
// is the cost of seckill's own work. Usage: hello ADDR (e.g. 127.0.0.1:18081).
package main

import (
	"fmt"
	"net/http"
	"os"

	"github.com/labstack/echo/v4"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: hello ADDR")
		os.Exit(2)
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.POST("/*", func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]string{"hello": "world"})
	})
	if err := e.Start(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
