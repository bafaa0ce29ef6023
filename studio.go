package accountable

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Content Studio prices content before it is made: POST /studio/estimate turns a format, a
// length and options into a credit breakdown, from the credit table below and nothing
// else, so the same request always gets the same estimate (and the same estimate_id).
// GET /studio/showcase pages through examples of what the studio makes, with their
// estimates, shipped with the service (studio_showcase.json).
//
// The credit table (StudioCreditTableVersion):
//
//	format               unit      block  credits/block  base  default  min   max   seo
//	blog_post            word      100    3              10    800      100   5000  yes
//	newsletter           word      100    2              8     600      100   3000  no
//	case_study           word      100    4              20    1200     300   4000  yes
//	landing_page         section   1      6              12    5        1     15    yes
//	product_description  item      1      3              4     5        1     100   yes
//	email_sequence       email     1      4              6     3        1     20    no
//	social_post          post      1      2              2     5        1     50    no
//	video_script         minute    1      5              10    3        1     60    no
//
// The content subtotal is base + ceil(units / block) × credits/block. Options add:
//
//	research      25 % of the content subtotal, rounded up
//	seo           15 % of the content subtotal, rounded up (formats marked seo only)
//	revisions     per round (0-5): 20 % of the content subtotal, rounded up
//	images        per image (0-20): 8 credits
//	translations  per extra language (0-10): 40 % of the content subtotal, rounded up
//	rush          50 % of everything above, rounded up
//
// The total is the sum of the line items; every line's credits are its quantity times its
// unit_credits. All arithmetic is on integers.

// StudioCreditTableVersion names the credit table; it changes whenever a number does.
const StudioCreditTableVersion = "studio-credits/2026-11-24"

// StudioFormat is a kind of content the studio makes.
type StudioFormat string

// Studio formats.
const (
	StudioBlogPost           StudioFormat = "blog_post"
	StudioNewsletter         StudioFormat = "newsletter"
	StudioCaseStudy          StudioFormat = "case_study"
	StudioLandingPage        StudioFormat = "landing_page"
	StudioProductDescription StudioFormat = "product_description"
	StudioEmailSequence      StudioFormat = "email_sequence"
	StudioSocialPost         StudioFormat = "social_post"
	StudioVideoScript        StudioFormat = "video_script"
)

// Enum lists the formats, in the credit table's order.
func (StudioFormat) Enum() []any {
	out := make([]any, len(StudioCreditTable))
	for i, r := range StudioCreditTable {
		out[i] = string(r.Format)
	}
	return out
}

// StudioRate is one row of the credit table.
type StudioRate struct {
	Format          StudioFormat
	Unit            string // what units count
	Block           int64  // units per priced block
	CreditsPerBlock int64
	Base            int64 // credits of any piece of the format
	DefaultUnits    int64
	MinUnits        int64
	MaxUnits        int64
	SEO             bool // the seo option applies
}

// StudioCreditTable is the credit table, one row per format.
var StudioCreditTable = []StudioRate{
	{StudioBlogPost, "word", 100, 3, 10, 800, 100, 5000, true},
	{StudioNewsletter, "word", 100, 2, 8, 600, 100, 3000, false},
	{StudioCaseStudy, "word", 100, 4, 20, 1200, 300, 4000, true},
	{StudioLandingPage, "section", 1, 6, 12, 5, 1, 15, true},
	{StudioProductDescription, "item", 1, 3, 4, 5, 1, 100, true},
	{StudioEmailSequence, "email", 1, 4, 6, 3, 1, 20, false},
	{StudioSocialPost, "post", 1, 2, 2, 5, 1, 50, false},
	{StudioVideoScript, "minute", 1, 5, 10, 3, 1, 60, false},
}

// Option prices (see the table above).
const (
	studioResearchPercent    = 25
	studioSEOPercent         = 15
	studioRevisionPercent    = 20
	studioImageCredits       = 8
	studioTranslationPercent = 40
	studioRushPercent        = 50
	maxStudioRevisions       = 5
	maxStudioImages          = 20
	maxStudioTranslations    = 10
)

// StudioRateOf returns the credit table's row of f.
func StudioRateOf(f StudioFormat) (StudioRate, bool) {
	i := slices.IndexFunc(StudioCreditTable, func(r StudioRate) bool { return r.Format == f })
	if i < 0 {
		return StudioRate{}, false
	}
	return StudioCreditTable[i], true
}

// StudioOptions are the extras of a piece of content.
type StudioOptions struct {
	Research     bool  `json:"research,omitzero" description:"Source research before writing (+25% of the content subtotal)."`
	SEO          bool  `json:"seo,omitzero" description:"Search optimisation (+15% of the content subtotal); blog_post, case_study, landing_page and product_description only."`
	Revisions    int64 `json:"revisions,omitzero" minimum:"0" maximum:"5" description:"Revision rounds (each +20% of the content subtotal)."`
	Images       int64 `json:"images,omitzero" minimum:"0" maximum:"20" description:"Images made for the piece (8 credits each)."`
	Translations int64 `json:"translations,omitzero" minimum:"0" maximum:"10" description:"Extra languages (each +40% of the content subtotal)."`
	Rush         bool  `json:"rush,omitzero" description:"Rush delivery (+50% of everything else)."`
}

// StudioAppliedOptions are the options an estimate priced, every one stated.
type StudioAppliedOptions struct {
	Research     bool  `json:"research"`
	SEO          bool  `json:"seo"`
	Revisions    int64 `json:"revisions" minimum:"0" maximum:"5"`
	Images       int64 `json:"images" minimum:"0" maximum:"20"`
	Translations int64 `json:"translations" minimum:"0" maximum:"10"`
	Rush         bool  `json:"rush"`
}

// StudioEstimateRequest is the input of POST /studio/estimate.
type StudioEstimateRequest struct {
	Format  StudioFormat   `json:"format"`
	Units   *int64         `json:"units,omitzero" minimum:"1" maximum:"5000" description:"The length in the format's unit (words, sections, items, emails, posts, minutes); default: the format's typical length."`
	Options *StudioOptions `json:"options,omitzero"`
}

// Validate checks the request: its fields, the length within the format's bounds, and
// options the format takes.
func (r StudioEstimateRequest) Validate() error {
	is := CheckFields(r)
	rate, ok := StudioRateOf(r.Format)
	if !ok {
		return is.Err()
	}
	unitsChecked := slices.ContainsFunc(is, func(i Issue) bool { return i.Path == "/units" })
	if r.Units != nil && !unitsChecked && (*r.Units < rate.MinUnits || *r.Units > rate.MaxUnits) {
		is.Add("/units", "a %s is %d to %d %ss long", r.Format, rate.MinUnits, rate.MaxUnits, rate.Unit)
	}
	if r.Options != nil && r.Options.SEO && !rate.SEO {
		is.Add("/options/seo", "does not apply to a %s", r.Format)
	}
	return is.Err()
}

// StudioLineItemCode names a line of an estimate.
type StudioLineItemCode string

// Line items, in the order an estimate lists them.
const (
	StudioLineBase         StudioLineItemCode = "base"
	StudioLineLength       StudioLineItemCode = "length"
	StudioLineResearch     StudioLineItemCode = "research"
	StudioLineSEO          StudioLineItemCode = "seo"
	StudioLineRevisions    StudioLineItemCode = "revisions"
	StudioLineImages       StudioLineItemCode = "images"
	StudioLineTranslations StudioLineItemCode = "translations"
	StudioLineRush         StudioLineItemCode = "rush"
)

// Enum lists the line item codes.
func (StudioLineItemCode) Enum() []any {
	return EnumStrings(StudioLineBase, StudioLineLength, StudioLineResearch, StudioLineSEO, StudioLineRevisions,
		StudioLineImages, StudioLineTranslations, StudioLineRush)
}

// StudioLineItem is one line of an estimate: credits = quantity × unit_credits.
type StudioLineItem struct {
	Code        StudioLineItemCode `json:"code"`
	Description string             `json:"description"`
	Quantity    int64              `json:"quantity" minimum:"1"`
	UnitCredits int64              `json:"unit_credits" minimum:"0"`
	Credits     int64              `json:"credits" minimum:"0"`
}

// StudioEstimate is the credit breakdown of a request.
type StudioEstimate struct {
	// EstimateID is "est_" + 24 hex digits of the SHA-256 of the canonical JSON of the
	// table version and the request with its defaults applied: the same request, the same id.
	EstimateID         string               `json:"estimate_id" pattern:"^est_[a-f0-9]{24}$"`
	CreditTableVersion string               `json:"credit_table_version"`
	Format             StudioFormat         `json:"format"`
	Unit               string               `json:"unit"`
	Units              int64                `json:"units" minimum:"1"`
	Options            StudioAppliedOptions `json:"options"`
	LineItems          []StudioLineItem     `json:"line_items" minItems:"2"`
	ContentSubtotal    int64                `json:"content_subtotal" minimum:"0"`
	TotalCredits       int64                `json:"total_credits" minimum:"0"`
}

// ceilPercent is p % of x, rounded up.
func ceilPercent(x, p int64) int64 { return (x*p + 99) / 100 }

// Estimate prices the request by the credit table. The request must have passed Validate.
func (r StudioEstimateRequest) Estimate() (StudioEstimate, error) {
	rate, ok := StudioRateOf(r.Format)
	if !ok {
		return StudioEstimate{}, fmt.Errorf("accountable: no studio format %q", r.Format)
	}
	units := rate.DefaultUnits
	if r.Units != nil {
		units = *r.Units
	}
	var opts StudioAppliedOptions
	if o := r.Options; o != nil {
		opts = StudioAppliedOptions{Research: o.Research, SEO: o.SEO, Revisions: o.Revisions, Images: o.Images,
			Translations: o.Translations, Rush: o.Rush}
	}
	est := StudioEstimate{CreditTableVersion: StudioCreditTableVersion, Format: r.Format, Unit: rate.Unit, Units: units, Options: opts}
	line := func(code StudioLineItemCode, quantity, unitCredits int64, format string, args ...any) {
		est.LineItems = append(est.LineItems, StudioLineItem{Code: code, Description: fmt.Sprintf(format, args...), Quantity: quantity,
			UnitCredits: unitCredits, Credits: quantity * unitCredits})
	}
	blocks := (units + rate.Block - 1) / rate.Block
	line(StudioLineBase, 1, rate.Base, "Base credits of a %s", strings.ReplaceAll(string(r.Format), "_", " "))
	blockName := rate.Unit
	if rate.Block > 1 {
		blockName = "block of " + strconv.FormatInt(rate.Block, 10) + " " + rate.Unit + "s"
	}
	line(StudioLineLength, blocks, rate.CreditsPerBlock, "%d %s%s: %d × %d credits per %s", units, rate.Unit, plural(units), blocks,
		rate.CreditsPerBlock, blockName)
	subtotal := rate.Base + blocks*rate.CreditsPerBlock
	est.ContentSubtotal = subtotal
	if opts.Research {
		line(StudioLineResearch, 1, ceilPercent(subtotal, studioResearchPercent), "Research: %d%% of the content subtotal (%d), rounded up",
			studioResearchPercent, subtotal)
	}
	if opts.SEO {
		line(StudioLineSEO, 1, ceilPercent(subtotal, studioSEOPercent), "Search optimisation: %d%% of the content subtotal (%d), rounded up",
			studioSEOPercent, subtotal)
	}
	if opts.Revisions > 0 {
		line(StudioLineRevisions, opts.Revisions, ceilPercent(subtotal, studioRevisionPercent),
			"%d revision round%s: each %d%% of the content subtotal (%d), rounded up", opts.Revisions, plural(opts.Revisions),
			studioRevisionPercent, subtotal)
	}
	if opts.Images > 0 {
		line(StudioLineImages, opts.Images, studioImageCredits, "%d image%s: %d credits each", opts.Images, plural(opts.Images), studioImageCredits)
	}
	if opts.Translations > 0 {
		line(StudioLineTranslations, opts.Translations, ceilPercent(subtotal, studioTranslationPercent),
			"%d extra language%s: each %d%% of the content subtotal (%d), rounded up", opts.Translations, plural(opts.Translations),
			studioTranslationPercent, subtotal)
	}
	var sum int64
	for _, l := range est.LineItems {
		sum += l.Credits
	}
	if opts.Rush {
		line(StudioLineRush, 1, ceilPercent(sum, studioRushPercent), "Rush delivery: %d%% of the other lines (%d), rounded up", studioRushPercent, sum)
		sum += est.LineItems[len(est.LineItems)-1].Credits
	}
	est.TotalCredits = sum
	digest, err := CanonicalDigest(struct {
		Table   string               `json:"credit_table_version"`
		Format  StudioFormat         `json:"format"`
		Units   int64                `json:"units"`
		Options StudioAppliedOptions `json:"options"`
	}{StudioCreditTableVersion, r.Format, units, opts})
	if err != nil {
		return StudioEstimate{}, err
	}
	est.EstimateID = "est_" + strings.TrimPrefix(digest, "sha256:")[:24]
	return est, nil
}

func plural(n int64) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// StudioExample is one example of the showcase: a piece the studio made, the request
// that prices it, and its total by the current credit table.
type StudioExample struct {
	ID           string                `json:"id" minLength:"1"`
	Title        string                `json:"title" minLength:"1"`
	Format       StudioFormat          `json:"format"`
	Summary      string                `json:"summary"`
	Excerpt      string                `json:"excerpt"`
	Tags         []string              `json:"tags"`
	Request      StudioEstimateRequest `json:"request"`
	TotalCredits int64                 `json:"total_credits" minimum:"0"`
}

// StudioShowcase is a page of the showcase: {examples, total, hasMore}.
type StudioShowcase struct {
	Examples []StudioExample `json:"examples"`
	Total    int             `json:"total" minimum:"0"`
	HasMore  bool            `json:"hasMore"`
}

// Showcase page sizes.
const (
	DefaultShowcaseLimit = 6
	MaxShowcaseLimit     = 50
)

//go:embed studio_showcase.json
var studioShowcaseJSON []byte

// loadShowcase reads the embedded examples once; each must be a valid request of its own
// format, with a unique id.
var loadShowcase = sync.OnceValues(func() ([]StudioExample, error) { return parseShowcase(studioShowcaseJSON) })

func parseShowcase(raw []byte) ([]StudioExample, error) {
	var examples []StudioExample
	if err := json.Unmarshal(raw, &examples); err != nil {
		return nil, fmt.Errorf("accountable: studio showcase: %w", err)
	}
	seen := map[string]bool{}
	for i := range examples {
		ex := &examples[i]
		if ex.ID == "" || seen[ex.ID] {
			return nil, fmt.Errorf("accountable: studio showcase example %d: missing or repeated id %q", i, ex.ID)
		}
		seen[ex.ID] = true
		if ex.Request.Format != ex.Format {
			return nil, fmt.Errorf("accountable: studio showcase %s: its request is for %s", ex.ID, ex.Request.Format)
		}
		if err := ex.Request.Validate(); err != nil {
			return nil, fmt.Errorf("accountable: studio showcase %s: %w", ex.ID, err)
		}
		est, err := ex.Request.Estimate()
		if err != nil {
			return nil, err
		}
		ex.TotalCredits = est.TotalCredits
		if ex.Tags == nil {
			ex.Tags = []string{}
		}
	}
	return examples, nil
}

// ShowcasePage returns the examples from offset, at most limit of them, with the total.
func ShowcasePage(limit, offset int) (StudioShowcase, error) {
	all, err := loadShowcase()
	if err != nil {
		return StudioShowcase{}, err
	}
	start := min(max(offset, 0), len(all))
	end := min(start+max(limit, 0), len(all))
	return StudioShowcase{Examples: slices.Clone(all[start:end]), Total: len(all), HasMore: end < len(all)}, nil
}

// StudioCheckoutRequest is what the public clients send to buy an estimate
// (POST /studio/checkout {estimateId}). A self-hosted service sells nothing: the operation
// is declared so that those clients hear why there is no checkout, and every request it
// accepts is refused with ErrCheckoutNotOffered. estimateId is optional for that reason: a
// client asking whether checkout exists gets the same answer with any estimate or none.
type StudioCheckoutRequest struct {
	EstimateID *string `json:"estimateId,omitzero" maxLength:"200" description:"The estimate a client of the hosted product would buy (estimate_id of POST /studio/estimate); this service sells nothing, so it is not looked up."`
}

// ErrCheckoutNotOffered is the answer of every checkout: 501 not_offered.
var ErrCheckoutNotOffered = &Error{Code: ECodeNotOffered, Message: "Checkout is not offered here: this is a self-hosted " +
	"Accountable Work Service, which sells nothing. Estimates (POST /studio/estimate) are for planning; nothing was charged or changed."}
