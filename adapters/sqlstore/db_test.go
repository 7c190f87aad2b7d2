package sqlstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/seckill/seckill/adapters/sqlstore"
)

func TestOpenRejectsBadDSN(t *testing.T) {
	for name, dsn := range map[string]string{
		"malformed":   "postgres://seckill:s3cret@127.0.0.1:notaport/seckill",
		"unreachable": "postgres://seckill:s3cret@127.0.0.1:1/seckill?sslmode=disable&connect_timeout=5",
	} {
		t.Run(name, func(t *testing.T) {
			db, err := sqlstore.Open(context.Background(), dsn)
			if err == nil {
				_ = db.Close()
				t.Fatal("Open succeeded, want an error")
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("error reveals the password: %v", err)
			}
		})
	}
}

func TestOpenPings(t *testing.T) {
	db := openDB(t)
	var got int
	if err := db.NewRaw("SELECT 1").Scan(context.Background(), &got); err != nil {
		t.Fatalf("select: %v", err)
	}
	if want := 1; got != want {
		t.Fatalf("SELECT 1 = %d, want %d", got, want)
	}
}
