package sqlstore_test

import (
	"fmt"
	"testing"

	"github.com/seckill/seckill/adapters/sqlstore"
)

func TestHealsRememberTheLastRunIDOfEachServer(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	h := sqlstore.NewHeals(openMigrated(t))
	got, err := h.Healed(ctx)
	if err != nil || len(got) != 0 {
		t.Fatalf("Healed before any record = %v, %v; want none", got, err)
	}
	if err := h.Record(ctx, map[string]string{"": "run-a"}); err != nil {
		t.Fatal(err)
	}
	if err := h.Record(ctx, map[string]string{"": "run-b", "node-2": "run-c"}); err != nil {
		t.Fatal(err)
	}
	if err := h.Record(ctx, nil); err != nil {
		t.Fatalf("Record of nothing: %v", err)
	}
	got, err = h.Healed(ctx)
	if err != nil || fmt.Sprint(got) != "map[:run-b node-2:run-c]" {
		t.Fatalf("Healed = %v, %v; want the last run_id of each server", got, err)
	}
}
