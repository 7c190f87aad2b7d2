package history

import (
	"strings"
	"testing"
)

// goodRoom is a waiting room that kept its promises: three early joiners shuffled
// into 30, 10, 20, a late one at 4; the first two let in, then sold out.
func goodRoom() Room {
	return Room{
		Published: []int64{30, 10, 20},
		Places: []Place{
			{User: 10, Position: 2, Admitted: true},
			{User: 30, Position: 1, Admitted: true},
			{User: 20, Position: 3, SoldOut: true},
			{User: 40, Position: 4, SoldOut: true},
		},
		Window:      2,
		Outstanding: []int{0, 2, 2, 1},
	}
}

func TestCheckRoomPassesAGoodRoom(t *testing.T) {
	if err := CheckRoom(goodRoom()); err != nil {
		t.Fatal(err)
	}
}

func TestCheckRoomFindsEachBrokenPromise(t *testing.T) {
	for _, c := range []struct {
		kind  string
		spoil func(r *Room)
	}{
		{PositionNotPublished, func(r *Room) { r.Places[0].Position, r.Places[1].Position = 1, 2 }},
		{PositionTwice, func(r *Room) { r.Places[3].Position = 3 }},
		{AdmittedAfterSoldOut, func(r *Room) { r.Places[3].Admitted = true }},
		{AdmittedOutOfOrder, func(r *Room) { r.Places[1].Admitted, r.Places[1].SoldOut = false, false }},
		{WindowExceeded, func(r *Room) { r.Outstanding = append(r.Outstanding, 3) }},
	} {
		r := goodRoom()
		c.spoil(&r)
		err := CheckRoom(r)
		if err == nil || !strings.Contains(err.Error(), c.kind) {
			t.Errorf("%s: CheckRoom = %v", c.kind, err)
		}
	}
}
