package workload

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
)

// Content Studio prices content before it is made, in the shape the public clients of the
// hosted product send and read (camelCase on the wire): POST /studio/estimate turns
// {prompt, contentTypes, variantCount?, brandUrl?, brandId?, platform?} into a credit
// breakdown from the credit table below and nothing else, so the same request always gets
// the same estimate and the same estimateId, and nothing is stored. GET /studio/showcase
// pages through examples of what the studio makes, shipped with the service
// (studio_showcase.json).
//
// The credit table (StudioCreditTableVersion). Every number is an integer of credits:
//
//	outputs          per piece, for each content type asked for, variantCount pieces
//	                 (default 1, at most 10): carousel 12, post 4, story 5, video 24,
//	                 banner 6, thumbnail 3; subtotal = count × creditsEach
//	brandIngestion   required only with brandUrl (a brand the studio has to read first);
//	                 its complexity follows the number of content types the brand must be
//	                 read for: 1 simple (10), 2-3 moderate (20), 4-6 complex (30); 0 credits
//	                 when not required (brandId alone names a brand as already known)
//	calibration      2 rounds with a brand to ingest, else 1; 5 credits a round
//	exploration      one round per variant (variantCount); 3 credits a round
//	composition      by the prompt's length in characters: up to 280 basic (×1), up to
//	                 1000 standard (×1.25), up to 4000 premium (×1.5); its credits are
//	                 the outputs' subtotal × (multiplier − 1), rounded up
//
// totalCredits is the sum of brandIngestion, calibration, exploration and composition
// credits and the outputs' subtotals. estimatedPrice is totalCredits at the table's
// reference rate of 0.10 USD a credit: a figure for planning, since this service sells
// nothing (POST /studio/checkout is 501 not_offered).
//
// The answer has no clock in it: expiresAt is null (an estimate does not expire by time;
// it holds while creditTableVersion is the table's), so the same request gets the same
// bytes on any day.

// StudioCreditTableVersion names the credit table; it changes whenever a number does.
const StudioCreditTableVersion = "studio-credits/2026-11-26"

// StudioContentType is a kind of content the studio makes.
type StudioContentType string

// Studio content types, in the order an estimate lists its outputs.
const (
	StudioCarousel  StudioContentType = "carousel"
	StudioPost      StudioContentType = "post"
	StudioStory     StudioContentType = "story"
	StudioVideo     StudioContentType = "video"
	StudioBanner    StudioContentType = "banner"
	StudioThumbnail StudioContentType = "thumbnail"
)

// StudioContentTypes are the content types, in the credit table's order.
var StudioContentTypes = []StudioContentType{StudioCarousel, StudioPost, StudioStory, StudioVideo, StudioBanner, StudioThumbnail}

// Enum lists the content types.
func (StudioContentType) Enum() []any { return accountable.EnumStrings(StudioContentTypes...) }

// studioOutputCredits are the credits of one piece of each content type.
var studioOutputCredits = map[StudioContentType]int64{
	StudioCarousel: 12, StudioPost: 4, StudioStory: 5, StudioVideo: 24, StudioBanner: 6, StudioThumbnail: 3,
}

// StudioBrandComplexity is how much reading a brand takes.
type StudioBrandComplexity string

// Brand ingestion complexities.
const (
	StudioBrandSimple   StudioBrandComplexity = "simple"
	StudioBrandModerate StudioBrandComplexity = "moderate"
	StudioBrandComplex  StudioBrandComplexity = "complex"
)

// Enum lists the brand ingestion complexities.
func (StudioBrandComplexity) Enum() []any {
	return accountable.EnumStrings(StudioBrandSimple, StudioBrandModerate, StudioBrandComplex)
}

// StudioCompositionComplexity is how much composing the prompt asks for.
type StudioCompositionComplexity string

// Composition complexities.
const (
	StudioCompositionBasic    StudioCompositionComplexity = "basic"
	StudioCompositionStandard StudioCompositionComplexity = "standard"
	StudioCompositionPremium  StudioCompositionComplexity = "premium"
)

// Enum lists the composition complexities.
func (StudioCompositionComplexity) Enum() []any {
	return accountable.EnumStrings(StudioCompositionBasic, StudioCompositionStandard, StudioCompositionPremium)
}

// StudioCurrency is the currency of an estimated price: only usd, as the clients read it.
type StudioCurrency string

// StudioUSD is the only currency.
const StudioUSD StudioCurrency = "usd"

// Enum lists the currencies.
func (StudioCurrency) Enum() []any { return accountable.EnumStrings(StudioUSD) }

// The rest of the credit table (see above).
const (
	DefaultStudioVariants        = 1
	MaxStudioVariants            = 10
	MaxStudioPromptLength        = 4000
	studioBrandCreditsSimple     = 10
	studioBrandCreditsModerate   = 20
	studioBrandCreditsComplex    = 30
	studioCalibrationRoundCredit = 5
	studioExplorationRoundCredit = 3
	studioBasicPromptLength      = 280
	studioStandardPromptLength   = 1000
	studioCentsPerCredit         = 10 // the reference rate: 0.10 USD
	studioEstimateShowcase       = 3  // examples an estimate shows
)

// StudioEstimateRequest is the input of POST /studio/estimate, as the public clients send it.
type StudioEstimateRequest struct {
	Prompt       string              `json:"prompt" minLength:"1" maxLength:"4000" description:"What to make, in words (1-4000 characters); its length sets the composition complexity."`
	ContentTypes []StudioContentType `json:"contentTypes" minItems:"1" maxItems:"6" uniqueItems:"true" description:"The kinds of content to make, each at most once."`
	VariantCount *int64              `json:"variantCount,omitzero" minimum:"1" maximum:"10" description:"Pieces of each content type (default 1)."`
	BrandURL     *string             `json:"brandUrl,omitzero" minLength:"1" maxLength:"2048" format:"uri" description:"An http or https address of a brand to read first (brand ingestion)."`
	BrandID      *string             `json:"brandId,omitzero" minLength:"1" maxLength:"200" description:"A brand named as already known: no ingestion (unless brandUrl is given too). Not looked up."`
	Platform     *string             `json:"platform,omitzero" minLength:"1" maxLength:"100" description:"Where the content will appear (free text); it does not change the price."`
}

// Validate checks the request: its fields, each content type at most once, and brandUrl an
// http or https address with a host.
func (r StudioEstimateRequest) Validate() error {
	is := accountable.CheckFields(r)
	seen := map[StudioContentType]int{}
	for i, t := range r.ContentTypes {
		if j, dup := seen[t]; dup {
			is.Add(fmt.Sprintf("/contentTypes/%d", i), "repeats contentTypes/%d (%s)", j, t)
			continue
		}
		seen[t] = i
	}
	if r.BrandURL != nil && !slices.ContainsFunc(is, func(i accountable.Issue) bool { return i.Path == "/brandUrl" }) && !validBrandURL(*r.BrandURL) {
		is.Add("/brandUrl", "must be an http or https URL with a host")
	}
	return is.Err()
}

func validBrandURL(s string) bool {
	if strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Hostname() != ""
}

// StudioBrandIngestion is the brand ingestion line of a breakdown.
type StudioBrandIngestion struct {
	Required   bool                  `json:"required"`
	Credits    int64                 `json:"credits" minimum:"0"`
	Complexity StudioBrandComplexity `json:"complexity"`
}

// StudioRounds is a calibration or exploration line of a breakdown.
type StudioRounds struct {
	Rounds  int64 `json:"rounds" minimum:"0"`
	Credits int64 `json:"credits" minimum:"0"`
}

// StudioComposition is the composition line of a breakdown.
type StudioComposition struct {
	Complexity StudioCompositionComplexity `json:"complexity"`
	Credits    int64                       `json:"credits" minimum:"0"`
	Multiplier float64                     `json:"multiplier" minimum:"1" description:"Applied to the outputs' subtotal; credits are the part above it, rounded up."`
}

// StudioOutput is one content type's line of a breakdown: subtotal = count × creditsEach.
type StudioOutput struct {
	Type        StudioContentType `json:"type"`
	Count       int64             `json:"count" minimum:"1"`
	CreditsEach int64             `json:"creditsEach" minimum:"0"`
	Subtotal    int64             `json:"subtotal" minimum:"0"`
}

// StudioCostBreakdown is where an estimate's credits go.
type StudioCostBreakdown struct {
	BrandIngestion StudioBrandIngestion `json:"brandIngestion"`
	Calibration    StudioRounds         `json:"calibration"`
	Exploration    StudioRounds         `json:"exploration"`
	Composition    StudioComposition    `json:"composition"`
	Outputs        []StudioOutput       `json:"outputs" minItems:"1" maxItems:"6"`
}

// StudioPrice is an estimate's price at the credit table's reference rate.
type StudioPrice struct {
	Amount   float64        `json:"amount" minimum:"0" description:"totalCredits × 0.10, in US dollars (two decimals)."`
	Currency StudioCurrency `json:"currency"`
}

// StudioEstimate is the answer of POST /studio/estimate, as the public clients read it.
type StudioEstimate struct {
	// EstimateID is "est_" + 24 hex digits of the SHA-256 of the canonical JSON of the
	// table version and the request with its defaults applied (content types in the
	// table's order): the same request, the same id.
	EstimateID         string              `json:"estimateId" pattern:"^est_[a-f0-9]{24}$"`
	CreditTableVersion string              `json:"creditTableVersion"`
	Breakdown          StudioCostBreakdown `json:"breakdown"`
	TotalCredits       int64               `json:"totalCredits" minimum:"0"`
	EstimatedPrice     StudioPrice         `json:"estimatedPrice"`
	ExpiresAt          *accountable.Time   `json:"expiresAt" description:"Always null: an estimate does not expire by the clock; it holds while creditTableVersion is the credit table's."`
	Showcase           []StudioExample     `json:"showcase" maxItems:"3" description:"Up to 3 showcase examples of the content types asked for, featured ones first."`
	RequiresAuth       bool                `json:"requiresAuth" description:"Always false: the caller is already authenticated."`
	AuthRedirectURL    *string             `json:"authRedirectUrl" description:"Always null (requiresAuth is false)."`
}

// ceilPercent is p % of x, rounded up.
func ceilPercent(x, p int64) int64 { return (x*p + 99) / 100 }

// Estimate prices the request by the credit table. The request must have passed Validate.
func (r StudioEstimateRequest) Estimate() (StudioEstimate, error) {
	variants := int64(DefaultStudioVariants)
	if r.VariantCount != nil {
		variants = *r.VariantCount
	}
	// The table's order, whatever the request's: the same set of types is the same request.
	types := slices.DeleteFunc(slices.Clone(StudioContentTypes), func(t StudioContentType) bool { return !slices.Contains(r.ContentTypes, t) })
	if len(types) == 0 {
		return StudioEstimate{}, fmt.Errorf("accountable: a studio estimate of no content type")
	}
	var b StudioCostBreakdown
	var outputs int64
	for _, t := range types {
		each := studioOutputCredits[t]
		b.Outputs = append(b.Outputs, StudioOutput{Type: t, Count: variants, CreditsEach: each, Subtotal: variants * each})
		outputs += variants * each
	}
	b.BrandIngestion.Complexity, b.BrandIngestion.Required = StudioBrandSimple, r.BrandURL != nil
	brandCredits := int64(studioBrandCreditsSimple)
	switch {
	case len(types) >= 4:
		b.BrandIngestion.Complexity, brandCredits = StudioBrandComplex, studioBrandCreditsComplex
	case len(types) >= 2:
		b.BrandIngestion.Complexity, brandCredits = StudioBrandModerate, studioBrandCreditsModerate
	}
	b.Calibration.Rounds = 1
	if b.BrandIngestion.Required {
		b.BrandIngestion.Credits = brandCredits
		b.Calibration.Rounds = 2
	}
	b.Calibration.Credits = b.Calibration.Rounds * studioCalibrationRoundCredit
	b.Exploration = StudioRounds{Rounds: variants, Credits: variants * studioExplorationRoundCredit}
	percent := int64(100)
	switch n := utf8.RuneCountInString(r.Prompt); {
	case n <= studioBasicPromptLength:
		b.Composition.Complexity = StudioCompositionBasic
	case n <= studioStandardPromptLength:
		b.Composition.Complexity, percent = StudioCompositionStandard, 125
	default:
		b.Composition.Complexity, percent = StudioCompositionPremium, 150
	}
	b.Composition.Multiplier = float64(percent) / 100
	b.Composition.Credits = ceilPercent(outputs, percent-100)
	total := b.BrandIngestion.Credits + b.Calibration.Credits + b.Exploration.Credits + b.Composition.Credits + outputs
	digest, err := canonical.DigestOf(struct {
		Table        string              `json:"creditTableVersion"`
		Prompt       string              `json:"prompt"`
		ContentTypes []StudioContentType `json:"contentTypes"`
		VariantCount int64               `json:"variantCount"`
		BrandURL     *string             `json:"brandUrl"`
		BrandID      *string             `json:"brandId"`
		Platform     *string             `json:"platform"`
	}{StudioCreditTableVersion, r.Prompt, types, variants, r.BrandURL, r.BrandID, r.Platform})
	if err != nil {
		return StudioEstimate{}, err
	}
	showcase, err := showcaseFor(types)
	if err != nil {
		return StudioEstimate{}, err
	}
	return StudioEstimate{
		EstimateID: "est_" + strings.TrimPrefix(digest, "sha256:")[:24], CreditTableVersion: StudioCreditTableVersion,
		Breakdown: b, TotalCredits: total,
		EstimatedPrice: StudioPrice{Amount: float64(total*studioCentsPerCredit) / 100, Currency: StudioUSD},
		Showcase:       showcase,
	}, nil
}

// showcaseFor is up to studioEstimateShowcase examples of the types, featured ones first,
// each group in the showcase's order.
func showcaseFor(types []StudioContentType) ([]StudioExample, error) {
	all, err := loadShowcase()
	if err != nil {
		return nil, err
	}
	out := []StudioExample{}
	for _, featured := range []bool{true, false} {
		for _, ex := range all {
			if len(out) < studioEstimateShowcase && ex.Featured == featured && slices.Contains(types, ex.ContentType) {
				out = append(out, ex.clone())
			}
		}
	}
	return out, nil
}

// StudioQAScores are an example's review scores, each from 0 to 1.
type StudioQAScores struct {
	Overall        float64 `json:"overall" minimum:"0" maximum:"1"`
	BrandAlignment float64 `json:"brandAlignment" minimum:"0" maximum:"1"`
	VisualQuality  float64 `json:"visualQuality" minimum:"0" maximum:"1"`
}

// StudioExample is one example of the showcase, in the public clients' shape (and
// featured, which the showcase filters on). The service ships no images: thumbnailUrl is
// null and previewUrls empty, rather than addresses that would not answer.
type StudioExample struct {
	ID           string            `json:"id" minLength:"1" maxLength:"100"`
	Title        string            `json:"title" minLength:"1" maxLength:"200"`
	ContentType  StudioContentType `json:"contentType"`
	Industry     string            `json:"industry" minLength:"1" maxLength:"100"`
	Style        string            `json:"style" minLength:"1" maxLength:"100"`
	Featured     bool              `json:"featured"`
	ThumbnailURL *string           `json:"thumbnailUrl" description:"null: this service ships no images."`
	PreviewURLs  []string          `json:"previewUrls" description:"Empty: this service ships no images."`
	QAScores     StudioQAScores    `json:"qaScores"`
}

func (ex StudioExample) clone() StudioExample {
	ex.PreviewURLs = slices.Clone(ex.PreviewURLs)
	if ex.PreviewURLs == nil {
		ex.PreviewURLs = []string{}
	}
	return ex
}

// StudioShowcase is a page of the showcase: {examples, total, hasMore}.
type StudioShowcase struct {
	Examples []StudioExample `json:"examples"`
	Total    int             `json:"total" minimum:"0" description:"The examples that match the filters, on every page."`
	HasMore  bool            `json:"hasMore"`
}

// Showcase page sizes.
const (
	DefaultShowcaseLimit = 6
	MaxShowcaseLimit     = 50
)

//go:embed studio_showcase.json
var studioShowcaseJSON []byte

// loadShowcase reads the embedded examples once; each must pass the example's rules, with
// a unique id.
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
		if err := accountable.CheckFields(ex).Err(); err != nil {
			return nil, fmt.Errorf("accountable: studio showcase %s: %w", ex.ID, err)
		}
		if ex.PreviewURLs == nil {
			ex.PreviewURLs = []string{}
		}
	}
	return examples, nil
}

// StudioShowcaseFilter says which examples a page is of: Query is a case-insensitive part
// of the title, industry or style; Industry and Style match whole, case-insensitively;
// ContentType and Featured exactly. Empty (nil) filters match everything.
type StudioShowcaseFilter struct {
	Query, Industry, Style string
	ContentType            *StudioContentType
	Featured               *bool
}

func (f StudioShowcaseFilter) matches(ex StudioExample) bool {
	q := strings.ToLower(f.Query)
	return (q == "" || strings.Contains(strings.ToLower(ex.Title), q) || strings.Contains(strings.ToLower(ex.Industry), q) ||
		strings.Contains(strings.ToLower(ex.Style), q)) &&
		(f.Industry == "" || strings.EqualFold(ex.Industry, f.Industry)) &&
		(f.Style == "" || strings.EqualFold(ex.Style, f.Style)) &&
		(f.ContentType == nil || ex.ContentType == *f.ContentType) &&
		(f.Featured == nil || ex.Featured == *f.Featured)
}

// ShowcasePage returns the examples that match f, from offset, at most limit of them, with
// how many match in all.
func ShowcasePage(f StudioShowcaseFilter, limit, offset int) (StudioShowcase, error) {
	all, err := loadShowcase()
	if err != nil {
		return StudioShowcase{}, err
	}
	var matched []StudioExample
	for _, ex := range all {
		if f.matches(ex) {
			matched = append(matched, ex)
		}
	}
	start := min(max(offset, 0), len(matched))
	end := min(start+max(limit, 0), len(matched))
	page := StudioShowcase{Examples: []StudioExample{}, Total: len(matched), HasMore: end < len(matched)}
	for _, ex := range matched[start:end] {
		page.Examples = append(page.Examples, ex.clone())
	}
	return page, nil
}

// StudioCheckoutRequest is what the public clients send to buy an estimate
// (POST /studio/checkout {estimateId}). A self-hosted service sells nothing: the operation
// is declared so that those clients hear why there is no checkout, and every request it
// accepts is refused with ErrCheckoutNotOffered. estimateId is optional for that reason: a
// client asking whether checkout exists gets the same answer with any estimate or none.
type StudioCheckoutRequest struct {
	EstimateID *string `json:"estimateId,omitzero" maxLength:"200" description:"The estimate a client of the hosted product would buy (estimateId of POST /studio/estimate); this service sells nothing, so it is not looked up."`
}

// ErrCheckoutNotOffered is the answer of every checkout: 501 not_offered.
var ErrCheckoutNotOffered = &accountable.Error{Code: accountable.ECodeNotOffered, Message: "Checkout is not offered here: this is a self-hosted " +
	"Accountable Work Service, which sells nothing. Estimates (POST /studio/estimate) are for planning; nothing was charged or changed."}
