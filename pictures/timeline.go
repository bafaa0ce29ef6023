package pictures

import (
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/accountablework/accountable"
)

// The timeline's geometry, in pixels.
const (
	tlWidth    = 1000
	tlLabelW   = 330 // the jobs' column
	tlChartX   = tlLabelW + 20
	tlChartW   = tlWidth - tlChartX - 40
	tlRowH     = 64
	tlHeaderH  = 118
	tlBarH     = 16
	tlFooterH  = 70
	colourRes  = "#7a5af8" // reservation
	colourRun  = "#1570ef" // run
	colourSetl = "#039855" // settlement
)

// LaunchTimeline draws a launch as a timeline: one row per job, in the launch's order, with
// its reservation (from the reservation to the run's dispatch), its run (from dispatch to
// its end) and its settlement (from the run's end to the reservation's settlement), on one
// time axis from the launch's creation to the last time the data has; the reserved and
// settled cost as text, per job and in all; and the decision blocking the launch marked on
// its job's row with a sign and words. Each segment is told by its shape and its words as
// well as its colour. Only the launch's own data is drawn, and nothing of the clock: the
// same launch gives the same bytes.
func LaunchTimeline(l accountable.Launch) ([]byte, error) {
	type row struct {
		job     accountable.LaunchJob
		receipt *accountable.ReservationReceipt
		run     *accountable.LaunchRun
	}
	rows := make([]row, len(l.Jobs))
	for i, j := range l.Jobs {
		rows[i].job = j
		for k := range l.Receipts {
			if l.Receipts[k].JobID == j.JobID && rows[i].receipt == nil {
				rows[i].receipt = &l.Receipts[k]
			}
		}
		for k := range l.Runs {
			if l.Runs[k].JobID == j.JobID {
				rows[i].run = &l.Runs[k] // the latest
			}
		}
	}
	// The axis: from the launch's creation to the latest time of the data.
	start := l.CreatedAt.Time
	end := start
	see := func(t *accountable.Time) {
		if t != nil && t.After(end) {
			end = t.Time
		}
	}
	for _, r := range rows {
		if r.receipt != nil {
			see(&r.receipt.CreatedAt)
			see(r.receipt.SettledAt)
		}
		if r.run != nil {
			see(&r.run.CreatedAt)
			see(r.run.FinalizedAt)
		}
	}
	if d := l.BlockingDecision; d != nil {
		see(&d.CreatedAt)
		see(d.DecidedAt)
	}
	span := end.Sub(start)
	if span <= 0 {
		span = time.Second
	}
	x := func(t time.Time) float64 {
		d := t.Sub(start)
		if d < 0 {
			d = 0
		}
		return tlChartX + float64(tlChartW)*float64(d)/float64(span)
	}

	height := tlHeaderH + max(len(rows), 1)*tlRowH + tlFooterH
	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
		`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-labelledby="title desc" font-family="%s" font-size="12">`+"\n",
		tlWidth, height, tlWidth, height, fontName)
	fmt.Fprintf(&b, "<title id=\"title\">Launch %s timeline</title>\n", esc(l.LaunchID))
	fmt.Fprintf(&b, "<desc id=\"desc\">%d job%s; state %s; reserved %s, settled %s of a %s ceiling.</desc>\n",
		len(rows), plural(len(rows)), esc(string(l.State)), money(l.Cost.ReservedCents), money(l.Cost.SettledCents), money(l.Cost.CostCeilingCents))
	b.WriteString(`<rect x="0" y="0" width="100%" height="100%" fill="#ffffff"/>` + "\n")

	// Heading: the launch, its cost, the blocking decision.
	fmt.Fprintf(&b, `<text x="16" y="24" font-size="16" font-weight="bold">Launch %s: %s</text>`+"\n", esc(l.LaunchID), esc(string(l.State)))
	fmt.Fprintf(&b, `<text x="16" y="44">Initiative %s · created %s · model tier %s · autonomy %s</text>`+"\n",
		esc(l.InitiativeID), esc(stamp(l.CreatedAt.Time)), esc(string(l.ModelTier)), esc(string(l.EffectiveAutonomy)))
	fmt.Fprintf(&b, `<text x="16" y="64">Cost: reserved %s, settled %s (estimate %s, ceiling %s)</text>`+"\n",
		money(l.Cost.ReservedCents), money(l.Cost.SettledCents), money(l.Cost.ServerEstimateCents), money(l.Cost.CostCeilingCents))
	if d := l.BlockingDecision; d != nil {
		fmt.Fprintf(&b, `<g id="blocking-decision"><rect x="16" y="72" width="14" height="14" fill="%s"/><text x="23" y="83" fill="#ffffff" font-weight="bold" text-anchor="middle">!</text>`+
			`<text x="36" y="84" font-weight="bold" fill="%s">BLOCKED on decision &#8220;%s&#8221; (%s, %s)%s</text></g>`+"\n",
			colourBreached, colourBreached, esc(oneLine(d.Title)), esc(string(d.Status)), esc(string(d.Shape)), esc(decisionJobNote(d, l.Jobs)))
	} else {
		b.WriteString(`<text x="16" y="84" fill="#475467">No decision blocks this launch.</text>` + "\n")
	}

	// The axis, with five ticks.
	axisY := tlHeaderH - 8
	fmt.Fprintf(&b, `<g id="axis" fill="#475467" font-size="10"><line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#98a2b3"/>`+"\n",
		tlChartX, axisY, tlChartX+tlChartW, axisY)
	for i := range 5 {
		at := start.Add(span * time.Duration(i) / 4)
		tx := x(at)
		anchor := "middle"
		switch i {
		case 0:
			anchor = "start"
		case 4:
			anchor = "end"
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#d0d5dd"/>`, tx, axisY, tx, height-tlFooterH+4)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="%s">+%s</text>`+"\n", tx, axisY-6, anchor, elapsed(at.Sub(start)))
	}
	b.WriteString("</g>\n")
	fmt.Fprintf(&b, `<text x="16" y="%d" font-weight="bold">Job (workstream · status)</text>`+"\n", axisY-6)

	if len(rows) == 0 {
		fmt.Fprintf(&b, `<text x="16" y="%d" fill="#475467">No jobs.</text>`+"\n", tlHeaderH+tlRowH/2)
	}
	for i, r := range rows {
		y := tlHeaderH + i*tlRowH
		barY := y + 12
		blocked := l.BlockingDecision != nil && l.BlockingDecision.JobID != nil && *l.BlockingDecision.JobID == r.job.JobID
		fmt.Fprintf(&b, `<g id="job-%s" class="job">`+"\n", esc(r.job.JobID))
		if i%2 == 1 {
			fmt.Fprintf(&b, `<rect x="0" y="%d" width="%d" height="%d" fill="#f9fafb"/>`+"\n", y, tlWidth, tlRowH)
		}
		status := string(r.job.Status)
		if r.job.BlockCode != nil {
			status += " (" + string(*r.job.BlockCode) + ")"
		}
		fmt.Fprintf(&b, `<text x="16" y="%d" font-weight="bold">%d. %s · %s</text>`+"\n", y+16, i+1, esc(short(r.job.WorkstreamID)), esc(status))
		reserved, settled := "none", "not yet"
		if r.receipt != nil {
			reserved = money(r.receipt.CostEstimateCents)
			if r.receipt.SettledCents != nil {
				settled = money(*r.receipt.SettledCents) + " " + string(r.receipt.SettlementStatus)
			}
		}
		fmt.Fprintf(&b, `<text x="16" y="%d">reserved %s · settled %s</text>`+"\n", y+32, esc(reserved), esc(settled))
		var words []string
		if rc := r.receipt; rc != nil {
			to := end
			switch {
			case r.run != nil:
				to = r.run.CreatedAt.Time
			case rc.SettledAt != nil:
				to = rc.SettledAt.Time
			}
			segment(&b, "reservation", x(rc.CreatedAt.Time), x(to), barY, tlBarH/2, colourRes, "",
				fmt.Sprintf("reservation of %s at %s", money(rc.CostEstimateCents), stamp(rc.CreatedAt.Time)))
			words = append(words, "reserved "+offset(start, rc.CreatedAt.Time))
		}
		if run := r.run; run != nil {
			dx := x(run.CreatedAt.Time)
			fmt.Fprintf(&b, `<path d="M%.1f %d l5 -6 l5 6 z" fill="#101828"><title>dispatch of run %s at %s</title></path>`+"\n",
				dx-5, barY, esc(run.ID), esc(stamp(run.CreatedAt.Time)))
			words = append(words, "dispatched "+offset(start, run.CreatedAt.Time))
			to, open := end, run.FinalizedAt == nil
			if !open {
				to = run.FinalizedAt.Time
			}
			dash := ""
			if open {
				dash = "4 3"
			}
			outcome := string(run.Status)
			if run.OutcomeKind != nil {
				outcome += ", " + string(*run.OutcomeKind)
			}
			segment(&b, "run", dx, x(to), barY, tlBarH, colourRun, dash,
				fmt.Sprintf("run %s: %s, cost %s", run.ID, outcome, money(run.CostCents)))
			if open {
				words = append(words, "run "+outcome+" (not ended)")
			} else {
				words = append(words, fmt.Sprintf("ran %s (%s)", Duration(int64(run.FinalizedAt.Sub(run.CreatedAt.Time)/time.Second)), outcome))
			}
			if rc := r.receipt; rc != nil && rc.SettledAt != nil && !open {
				segment(&b, "settlement", x(run.FinalizedAt.Time), x(rc.SettledAt.Time), barY+tlBarH/4, tlBarH/2, colourSetl, "",
					fmt.Sprintf("settlement: %s at %s", rc.SettlementStatus, stamp(rc.SettledAt.Time)))
			}
		}
		if rc := r.receipt; rc != nil && rc.SettledAt != nil {
			sx := x(rc.SettledAt.Time)
			fmt.Fprintf(&b, `<path d="M%.1f %d l5 8 l-5 8 l-5 -8 z" fill="%s" stroke="#ffffff"><title>%s at %s</title></path>`+"\n",
				sx, barY, colourSetl, esc(string(rc.SettlementStatus)), esc(stamp(rc.SettledAt.Time)))
			words = append(words, string(rc.SettlementStatus)+" "+offset(start, rc.SettledAt.Time))
		}
		if blocked {
			d := l.BlockingDecision
			bx := x(d.CreatedAt.Time)
			fmt.Fprintf(&b, `<g class="blocked"><rect x="%.1f" y="%d" width="14" height="14" fill="%s"/><text x="%.1f" y="%d" fill="#ffffff" font-weight="bold" text-anchor="middle">!</text>`+
				`<title>blocked on decision %s (%s)</title></g>`+"\n", bx, barY+1, colourBreached, bx+7, barY+12, esc(oneLine(d.Title)), esc(string(d.Status)))
			words = append([]string{"BLOCKED on decision " + strings.TrimSpace(oneLine(d.Title))}, words...)
		}
		if len(words) == 0 {
			words = []string{"nothing yet"}
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="10" fill="#344054">%s</text>`+"\n", tlChartX, barY+tlBarH+16, esc(strings.Join(words, " · ")))
		fmt.Fprintf(&b, `<text x="16" y="%d" font-size="10" fill="#667085">job %s</text>`+"\n", y+48, esc(r.job.JobID))
		b.WriteString("</g>\n")
	}

	// The legend: each segment's shape and name.
	ly := height - tlFooterH + 28
	b.WriteString(`<g id="legend" font-size="11">` + "\n")
	fmt.Fprintf(&b, `<rect x="16" y="%d" width="24" height="8" fill="%s"/><text x="46" y="%d">reservation (thin bar, to dispatch)</text>`+"\n", ly-8, colourRes, ly)
	fmt.Fprintf(&b, `<path d="M250 %d l5 -6 l5 6 z" fill="#101828"/><text x="266" y="%d">dispatch</text>`+"\n", ly, ly)
	fmt.Fprintf(&b, `<rect x="340" y="%d" width="24" height="14" fill="%s"/><text x="370" y="%d">run (full bar; dashed: not ended)</text>`+"\n", ly-11, colourRun, ly)
	fmt.Fprintf(&b, `<path d="M590 %d l5 8 l-5 8 l-5 -8 z" fill="%s"/><text x="602" y="%d">settlement (diamond)</text>`+"\n", ly-12, colourSetl, ly)
	fmt.Fprintf(&b, `<rect x="740" y="%d" width="14" height="14" fill="%s"/><text x="760" y="%d">blocking decision (!)</text>`+"\n", ly-11, colourBreached, ly)
	fmt.Fprintf(&b, `<text x="16" y="%d" font-size="10" fill="#667085">Times from %s (UTC); amounts in USD.</text>`+"\n", ly+22, esc(stamp(start)))
	b.WriteString("</g>\n</svg>\n")
	return []byte(b.String()), nil
}

// segment draws a bar from x1 to x2 (at least 2 pixels wide), with its title.
func segment(b *strings.Builder, class string, x1, x2 float64, y, h int, colour, dash, title string) {
	w := max(x2-x1, 2)
	stroke := ""
	if dash != "" {
		stroke = fmt.Sprintf(` fill-opacity="0.35" stroke="%s" stroke-dasharray="%s"`, colour, dash)
	}
	fmt.Fprintf(b, `<rect class="%s" x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"%s><title>%s</title></rect>`+"\n",
		class, x1, y, w, h, colour, stroke, esc(title))
}

// decisionJobNote names the job a decision blocks by its row.
func decisionJobNote(d *accountable.Decision, jobs []accountable.LaunchJob) string {
	if d.JobID == nil {
		return ""
	}
	for i, j := range jobs {
		if j.JobID == *d.JobID {
			return fmt.Sprintf(" on job %d", i+1)
		}
	}
	return ""
}

// esc escapes s for XML text and attributes; characters XML cannot hold become U+FFFD.
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder does not fail
	return b.String()
}

// money writes cents as dollars.
func money(cents int64) string {
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	return fmt.Sprintf("%s$%d.%02d", sign, cents/100, cents%100)
}

// stamp writes an instant in UTC to the second.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }

// offset writes how long after start t is.
func offset(start, t time.Time) string { return "+" + elapsed(t.Sub(start)) }

// elapsed is d as the timeline writes it: Duration's whole units from 10 s, and under it
// milliseconds or tenths of a second, so that a launch of a few seconds (a dry run, a
// test's) does not read +0s everywhere.
func elapsed(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return Duration(int64(d / time.Second))
	case d >= time.Second:
		return strconv.FormatFloat(d.Round(100*time.Millisecond).Seconds(), 'f', -1, 64) + "s"
	case d > 0:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	}
	return "0s"
}

// short is the first 8 characters of an id.
func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
