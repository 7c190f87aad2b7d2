package domain_test

import (
	"errors"
	"testing"
	"time"

	"github.com/seckill/seckill/domain"
)

// TestCampaignRoom: a campaign's waiting room goes by the number 0 of its block of
// voucher ids, which every voucher of the campaign names as its room; the room and
// each voucher carry the campaign's settings and seed, filled in by the defaults.
func TestCampaignRoom(t *testing.T) {
	t.Parallel()
	begins := time.Date(2099, 1, 1, 12, 0, 0, 0, time.UTC)
	c := domain.Campaign{ID: 7, Title: "Sneakers", BeginsAt: begins, EndsAt: begins.Add(time.Hour), PerUserLimit: 2,
		Admission: domain.AdmissionWaitingRoom}
	c = c.WithAdmissionDefaults(begins.Add(-time.Hour))
	if c.Seed == domain.NoSeed || c.QueueWindow != domain.DefaultQueueWindow || !c.QueueOpensAt.Equal(begins.Add(-domain.DefaultQueueLead)) ||
		c.Challenge != domain.ChallengeNone {
		t.Fatalf("defaults: %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	room := c.Room()
	if room.ID != c.ID.Room() || !room.OwnRoom() || room.Commitment() == "" || room.Seed != c.Seed || room.QueueWindow != c.QueueWindow {
		t.Fatalf("room %+v", room)
	}
	if cid, k := room.ID.Campaign(); cid != c.ID || k != 0 {
		t.Fatalf("the room's id %s reads campaign %s, number %d", room.ID, cid, k)
	}
	v, err := c.Variant(domain.Voucher{Title: "40", Stock: 5})
	if err != nil {
		t.Fatal(err)
	}
	if v.ID.Room() != room.ID || v.OwnRoom() || v.Seed != c.Seed || v.Commitment() != room.Commitment() ||
		v.QueueWindow != c.QueueWindow || !v.QueueOpensAt.Equal(c.QueueOpensAt) {
		t.Fatalf("variant %+v: its room is %s", v, v.ID.Room())
	}
	if err := v.Validate(); err != nil {
		t.Fatalf("the variant: %v", err)
	}
	if plain := domain.VoucherID(42); plain.Room() != plain {
		t.Fatalf("a voucher outside a campaign is its own room, not %s", plain.Room())
	}

	first := domain.Campaign{ID: 8, Title: "x", BeginsAt: begins, EndsAt: begins.Add(time.Hour), PerUserLimit: 1}.WithAdmissionDefaults(begins)
	if first.Seed != domain.NoSeed || first.QueueWindow != 0 || first.Admission != domain.AdmissionFirstCome {
		t.Fatalf("a first-come campaign: %+v", first)
	}
	for name, bad := range map[string]domain.Campaign{
		"a draw":          {Admission: domain.AdmissionDraw},
		"no queue window": {Admission: domain.AdmissionWaitingRoom, QueueOpensAt: begins.Add(-time.Minute), Seed: c.Seed},
		"late opening":    {Admission: domain.AdmissionWaitingRoom, QueueWindow: 1, QueueOpensAt: begins, Seed: c.Seed},
		"no seed":         {Admission: domain.AdmissionWaitingRoom, QueueWindow: 1, QueueOpensAt: begins.Add(-time.Minute)},
	} {
		bad.Title, bad.BeginsAt, bad.EndsAt, bad.PerUserLimit = "x", begins, begins.Add(time.Hour), 1
		if err := bad.Validate(); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
}
