package api

import (
	"context"
	"mime"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
)

// Alternate is another representation of an operation's success answer (Operation.
// Alternates): its media type and what it shows, made from the handler's result by
// render. A request gets it when its Accept header prefers it to JSON (negotiate); errors
// are always the JSON envelope.
type Alternate struct {
	ContentType string // the media type it is answered as: image/svg+xml
	Description string // what it shows, for the OpenAPI document
	out         reflect.Type
	render      func(ctx context.Context, out any) ([]byte, error)
}

// pictureWait is how long a request for a representation waits for its workspace's
// previous one to be drawn (Server.pictureTurns) before it is answered 429 rate_limited.
const pictureWait = 10 * time.Second

// alternate declares a representation of the result of an operation answering Out.
func alternate[Out any](contentType, description string, render func(context.Context, Out) ([]byte, error)) Alternate {
	return Alternate{ContentType: contentType, Description: description, out: reflect.TypeFor[Out](),
		render: func(ctx context.Context, out any) ([]byte, error) { return render(ctx, out.(Out)) }}
}

// checkAlternates panics at start-up when an operation's alternates cannot serve it: a
// representation of another type than its result, or of an operation that writes its
// answer itself, answers bare or streams.
func (d *operation) checkAlternates() {
	for _, a := range d.Alternates {
		if a.out != d.out {
			panic("api: " + d.ID + " offers " + a.ContentType + " of " + a.out.String() + ", but answers " + d.out.String())
		}
		if d.Raw || d.Bare || d.EventStream || d.NotOffered {
			panic("api: " + d.ID + " offers " + a.ContentType + ", but is Raw, Bare, EventStream or NotOffered")
		}
		if m, _, err := mime.ParseMediaType(a.ContentType); err != nil || m != a.ContentType || m == fiber.MIMEApplicationJSON {
			panic("api: " + d.ID + " offers an alternate of media type " + a.ContentType)
		}
	}
}

// negotiate chooses the representation of a success answer the Accept header prefers:
// nil for JSON, else one of alts. Each representation takes the quality (q, 1 when not
// given) of the most specific media range that matches it (type/subtype over type/* over
// */*, parameters other than q ignored); the highest quality above 0 wins, a tie goes to
// the representation matched by the more specific range, and a tie of both to JSON, the
// default, as do no Accept header and one that matches nothing (no 406: JSON is answered as
// before). So a browser's <img> (Accept: image/avif,image/webp,image/apng,image/svg+xml,
// image/*,*/*;q=0.8) gets the SVG, while Accept: application/json, */*, or
// "image/svg+xml, application/json" get JSON.
func negotiate(accept string, alts []Alternate) *Alternate {
	if len(alts) == 0 || strings.TrimSpace(accept) == "" {
		return nil
	}
	ranges := parseAccept(accept)
	bestQ, bestSpec := preference(ranges, fiber.MIMEApplicationJSON)
	var best *Alternate
	for i := range alts {
		q, spec := preference(ranges, alts[i].ContentType)
		if q > bestQ || (q == bestQ && q > 0 && spec > bestSpec) {
			best, bestQ, bestSpec = &alts[i], q, spec
		}
	}
	if bestQ <= 0 {
		return nil
	}
	return best
}

// mediaRange is a media range of an Accept header with its quality.
type mediaRange struct {
	typ, sub string
	q        float64
}

// parseAccept reads an Accept header's media ranges; a range that does not parse, or whose
// q is not a number from 0 to 1, is skipped.
func parseAccept(accept string) []mediaRange {
	var out []mediaRange
	for part := range strings.SplitSeq(accept, ",") {
		fields := strings.Split(part, ";")
		typ, sub, ok := strings.Cut(strings.ToLower(strings.TrimSpace(fields[0])), "/")
		if !ok || typ == "" || sub == "" || (typ == "*" && sub != "*") {
			continue
		}
		r := mediaRange{typ: typ, sub: sub, q: 1}
		for _, p := range fields[1:] {
			name, value, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(strings.TrimSpace(name), "q") {
				q, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
				if err != nil || q < 0 || q > 1 {
					r.q = -1
				} else {
					r.q = q
				}
			}
		}
		if r.q >= 0 {
			out = append(out, r)
		}
	}
	return out
}

// preference is the quality the ranges give media type mt, and how specific the range
// that gives it is (3 type/subtype, 2 type/*, 1 */*, 0 none: quality 0).
func preference(ranges []mediaRange, mt string) (q float64, specificity int) {
	typ, sub, _ := strings.Cut(mt, "/")
	for _, r := range ranges {
		s := 0
		switch {
		case r.typ == typ && r.sub == sub:
			s = 3
		case r.typ == typ && r.sub == "*":
			s = 2
		case r.typ == "*":
			s = 1
		}
		if s > specificity || (s == specificity && s > 0 && r.q > q) {
			q, specificity = r.q, s
		}
	}
	return q, specificity
}
