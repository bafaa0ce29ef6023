package projection_test

import (
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/projection"
)

// Buckets follow the zone's calendar: a day across a DST change is 23 or 25 hours long,
// weeks start on Monday at local midnight, months on the first.
func TestWorkLedgerWindow(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	at := func(s string) *time.Time { v, _ := time.Parse(time.RFC3339, s); return &v }
	cases := []struct {
		name      string
		q         projection.WorkLedgerQuery
		buckets   int
		first     string // label
		firstLen  time.Duration
		lastLabel string
	}{
		{"spring forward", projection.WorkLedgerQuery{Bucket: accountable.BucketDay, TimeZone: "Europe/Berlin",
			From: at("2026-03-29T00:30:00+01:00"), To: at("2026-03-31T00:00:00+02:00")}, 2, "2026-03-29", 23 * time.Hour, "2026-03-30"},
		{"fall back", projection.WorkLedgerQuery{Bucket: accountable.BucketDay, TimeZone: "Europe/Berlin",
			From: at("2026-10-25T12:00:00+01:00"), To: at("2026-10-26T00:00:00+01:00")}, 1, "2026-10-25", 25 * time.Hour, "2026-10-25"},
		{"weeks from Monday", projection.WorkLedgerQuery{Bucket: accountable.BucketWeek, TimeZone: "Europe/Berlin",
			From: at("2026-11-25T10:00:00Z"), To: at("2026-12-01T00:00:00Z")}, 2, "2026-W48", 7 * 24 * time.Hour, "2026-W49"},
		{"months", projection.WorkLedgerQuery{Bucket: accountable.BucketMonth, TimeZone: "UTC",
			From: at("2026-01-31T23:00:00Z"), To: at("2026-03-01T00:00:00Z")}, 2, "2026-01", 31 * 24 * time.Hour, "2026-02"},
		{"defaults: 30 days to now", projection.WorkLedgerQuery{Now: *at("2026-11-23T10:00:00Z")}, 30, "2026-10-25", 24 * time.Hour, "2026-11-23"},
		{"to on a boundary ends before it", projection.WorkLedgerQuery{Bucket: accountable.BucketDay, TimeZone: "UTC",
			From: at("2026-11-01T00:00:00Z"), To: at("2026-11-03T00:00:00Z")}, 2, "2026-11-01", 24 * time.Hour, "2026-11-02"},
	}
	for _, c := range cases {
		w, err := c.q.Window()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		p := projection.NewWorkLedger(w)
		if len(p.Buckets) != c.buckets || p.Buckets[0].Label != c.first || p.Buckets[0].End.Sub(p.Buckets[0].Start.Time) != c.firstLen ||
			p.Buckets[len(p.Buckets)-1].Label != c.lastLabel {
			t.Errorf("%s: %d buckets %+v", c.name, len(p.Buckets), p.Buckets)
		}
		for i := 1; i < len(p.Buckets); i++ {
			if !p.Buckets[i].Start.Equal(p.Buckets[i-1].End.Time) {
				t.Errorf("%s: bucket %d does not start where %d ends", c.name, i, i-1)
			}
		}
		if w.Location.String() == "Europe/Berlin" && p.Buckets[0].Start.In(berlin).Hour() != 0 {
			t.Errorf("%s: starts at %v", c.name, p.Buckets[0].Start.In(berlin))
		}
	}
	for _, q := range []projection.WorkLedgerQuery{
		{Bucket: "hour"}, {TimeZone: "Local"}, {TimeZone: "../../etc/passwd"}, {TimeZone: "Mars/Olympus"},
		{From: at("2026-11-02T00:00:00Z"), To: at("2026-11-01T00:00:00Z")},
		{Bucket: accountable.BucketDay, From: at("2025-01-01T00:00:00Z"), To: at("2026-11-01T00:00:00Z")}, // > 366 days
	} {
		if _, err := q.Window(); accountable.ErrorCode(err) != accountable.ECodeValidationFailed {
			t.Errorf("%+v: %v", q, err)
		}
	}
	if _, err := (projection.WorkLedgerQuery{Bucket: accountable.BucketDay, From: at("2025-11-01T00:00:00Z"), To: at("2026-11-01T00:00:00Z")}).Window(); err != nil {
		t.Errorf("365 days: %v", err)
	}
}
