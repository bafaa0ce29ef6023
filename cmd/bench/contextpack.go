package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/contextpack"
	"github.com/accountablework/accountable/store"
)

// The context line (POST /context-pack): a task's capsule in a workspace of
// ContextEvents ledger events, delivered whole and as a delta.
//
//   - set-up: while the workflow lines' worker runs, an initiative is proposed (through the
//     fake model) and committed in the workspace `Bench context`, and its first task is the
//     scope; decisions on the initiative (pending and decided) and artifacts on the task and
//     the initiative make its capsule one an agent would get; then the workspace is seeded
//     through the API to ContextEvents events (work items, decisions and open handoffs
//     outside the initiative: contextSeedPlan), and VACUUM ANALYZE;
//   - full: POST /context-pack with delivery_mode full at each of ContextClients, beside the
//     bare Fiber + pgx server reading the same sources with the store's own snapshot read
//     (store.ReadContextSources) and answering them as JSON: what the service adds is the
//     capsule (ranking and trimming to the token budget, counting tokens, the canonical
//     text and its digest) and the transfer. Every answer is checked to carry the version
//     of a text checked once before the runs (its sha256, its bytes and tokens against the
//     accounting);
//   - delta turns, one client: an event is added to the scope (a decision on the
//     initiative, or an artifact on the task, in turn; not timed), then POST /context-pack
//     with delivery_mode delta against the version the client holds (timed). Every delta
//     is rebuilt (contextpack.Apply) and its sha256 checked against its version; the
//     tokens of its operations' JSON and of the text it rebuilds are counted with the
//     reader's tokenizer (o200k_base): the tokens saved by the delta.
//
// No limit exists for the delta or the saving: they are reported beside the stated targets
// (contextTargetP99, contextTargetSaved), as the live stream's and the transparency log's
// lines are.

const (
	// contextBudget and contextTokenizer are every request's max_payload_tokens and
	// reader_tokenizer (the service's defaults, sent explicitly).
	contextBudget    = accountable.DefaultContextPayloadTokens
	contextTokenizer = accountable.TokenizerO200k
	// contextTargetP99 is the stated target of a capsule's p99, full or delta: a capsule is
	// read once per turn of an agent whose model call takes seconds.
	contextTargetP99 = 100 * time.Millisecond
	// contextTargetSaved is the stated target of the tokens a one-event delta saves: a
	// change of one item changes a few lines of a text of hundreds.
	contextTargetSaved = 0.90
	// contextMinTurns: delta turns measured per run at least, however long they take.
	contextMinTurns = 3
)

// contextSeed is how the events seeded in the context workspace are made.
type contextSeed struct{ work, decisions, handoffs int }

// contextSeedPlan splits missing events: 70% work items (POST /work), 20% decisions
// outside the initiative (POST /decisions), 10% open handoffs (POST /handoffs), one event
// each. The capsule's reads of decisions and handoffs read those tables of the workspace,
// so they hold rows that are not the scope's, as a busy workspace's do.
func contextSeedPlan(missing int) contextSeed {
	if missing <= 0 {
		return contextSeed{}
	}
	d, h := missing/5, missing/10
	return contextSeed{work: missing - d - h, decisions: d, handoffs: h}
}

// contextText is a capsule text a client holds, with its version.
type contextText struct{ version, text string }

// contextAnswer is what the harness reads of POST /context-pack's data.
type contextAnswer struct {
	Delivery struct {
		Mode         string   `json:"mode"`
		BaseVerified bool     `json:"base_verified"`
		Rebootstrap  bool     `json:"rebootstrap_required"`
		Reasons      []string `json:"reasons"`
		Accounting   struct {
			Bytes  int  `json:"serialized_data_bytes"`
			Tokens *int `json:"serialized_data_tokens"`
		} `json:"accounting"`
	} `json:"context_delivery"`
	Transfer *contextTransfer `json:"context_transfer"`
}

// contextTransfer is data.context_transfer, its operations as they came.
type contextTransfer struct {
	Mode        string          `json:"mode"`
	Version     string          `json:"version"`
	BaseVersion string          `json:"base_version"`
	Serialized  *string         `json:"serialized"`
	Operations  json.RawMessage `json:"operations"`
}

// sha256Version is "sha256:" + the hex SHA-256 of text: a transfer's version, computed here
// rather than by the service's code.
func sha256Version(text string) string {
	sum := sha256.Sum256([]byte(text))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// rebuildContext is the text a transfer carries: its serialized text, or its delta's
// operations applied to held (which must be its base); the text's sha256 must be the
// transfer's version.
func rebuildContext(held *contextText, tr *contextTransfer) (contextText, error) {
	if tr == nil {
		return contextText{}, errors.New("the answer has no context_transfer")
	}
	var text string
	switch tr.Mode {
	case "full":
		if tr.Serialized == nil {
			return contextText{}, errors.New("a full transfer without serialized")
		}
		text = *tr.Serialized
	case "delta":
		if held == nil || tr.BaseVersion != held.version {
			return contextText{}, fmt.Errorf("a delta against %s, not the text held", tr.BaseVersion)
		}
		var ops []accountable.ContextOperation
		if err := json.Unmarshal(tr.Operations, &ops); err != nil {
			return contextText{}, fmt.Errorf("the delta's operations: %w", err)
		}
		var err error
		if text, err = contextpack.Apply(held.text, ops); err != nil {
			return contextText{}, err
		}
	default:
		return contextText{}, fmt.Errorf("a transfer of mode %q", tr.Mode)
	}
	if v := sha256Version(text); v != tr.Version {
		return contextText{}, fmt.Errorf("the rebuilt text's sha256 is %s, not the version %s", v, tr.Version)
	}
	return contextText{version: tr.Version, text: text}, nil
}

// tokensSaved is the share of a full text's tokens a delta of deltaTokens does not send.
func tokensSaved(deltaTokens, textTokens int) float64 {
	if textTokens <= 0 {
		return 0
	}
	return 1 - float64(deltaTokens)/float64(textTokens)
}

// contextTurn is one measured delta turn's figures.
type contextTurn struct {
	AnswerBytes int // the HTTP answer's body
	DeltaBytes  int // the operations' JSON, as served
	DeltaTokens int // its tokens
	TextBytes   int // the text it rebuilds
	TextTokens  int // its tokens
}

func (t contextTurn) saved() float64 { return tokensSaved(t.DeltaTokens, t.TextTokens) }

// contextFull is the full transfer at one client count: its line of the main table (the
// service beside the bare read) and the answer's sizes.
type contextFull struct {
	clients                      int
	line                         *line
	answerBytes, textBytes, toks int
}

// contextResult is the context line's state and measurements.
type contextResult struct {
	initiative, workstream, task string
	events                       int // the workspace's events when the full runs began
	seeded                       int
	seedTook                     time.Duration
	full                         []*contextFull
	deltaRuns                    []sample
	turns                        []contextTurn
	turnPosts, turnEvents        int // events posted by the delta runs (warm-up included), events they added
	notes                        []string
	took                         time.Duration
}

// contextScope proposes and commits the context line's initiative (the workflow lines'
// worker and fake model run) and takes its first task as the line's scope.
func (b *bench) contextScope(wb *workflowBench) error {
	base := "http://" + b.svcAddr + "/api/v1"
	logf("context: proposing and committing the initiative of the scope")
	raw, err := wb.call(http.MethodPost, base+"/initiatives/proposals", b.context.Key, b.nextTag("ctx-proposal"),
		`{"title":"Public status page","prompt":"Ship a public status page that shows the health of the API and its incidents."}`, http.StatusCreated)
	if err != nil {
		return err
	}
	var proposal struct {
		ID     string `json:"proposal_id"`
		Digest string `json:"proposal_digest"`
	}
	if err := decodeData(raw, &proposal); err != nil {
		return err
	}
	body, _ := json.Marshal(map[string]any{"proposal_id": proposal.ID, "proposal_digest": proposal.Digest})
	if raw, err = wb.call(http.MethodPost, base+"/initiatives", b.context.Key, b.nextTag("ctx-commit"), string(body), http.StatusCreated); err != nil {
		return err
	}
	var committed accountable.InitiativeCommitted
	if err := decodeData(raw, &committed); err != nil {
		return err
	}
	if raw, err = wb.call(http.MethodGet, base+"/initiatives/"+committed.Initiative.ID+"?include=tree", b.context.Key, "", "", http.StatusOK); err != nil {
		return err
	}
	var ini accountable.Initiative
	if err := decodeData(raw, &ini); err != nil {
		return err
	}
	if ini.Tree == nil || len(ini.Tree.Workstreams) == 0 || len(ini.Tree.Workstreams[0].Milestones) == 0 ||
		len(ini.Tree.Workstreams[0].Milestones[0].Tasks) == 0 {
		return fmt.Errorf("the committed initiative has no task: %s", truncate(string(raw), 300))
	}
	w := ini.Tree.Workstreams[0]
	b.ctxLine = &contextResult{initiative: ini.ID, workstream: w.ID, task: w.Milestones[0].Tasks[0].ID}
	return nil
}

// contextLine measures the line on the scope contextScope made.
func (b *bench) contextLine() error {
	cl := b.ctxLine
	if cl == nil {
		return errors.New("no scope: the initiative was not committed")
	}
	started := time.Now()
	defer func() { cl.took = time.Since(started) }()
	if err := b.contextScene(cl); err != nil {
		return err
	}
	if err := b.contextSeed(cl); err != nil {
		return err
	}

	svcBody := contextBody(b.context.WorkspaceID, cl.task, "full", "")
	first, err := b.contextFirst(svcBody)
	if err != nil {
		return err
	}
	marker := []byte(`"version":"` + first.version + `"`)
	for _, c := range b.s.ContextClients {
		f := &contextFull{clients: c, line: &line{ID: "context", Name: fmt.Sprintf("POST /context-pack (full): a task's capsule, %d events", cl.events),
			Clients: c, Unit: "req/s", Latency: "request",
			LimitName: "bare Fiber + pgx: the same snapshot reads (store.ReadContextSources), the sources as JSON"}}
		f.textBytes, f.toks = len(first.text), first.tokens
		cl.full = append(cl.full, f)
		b.lines = append(b.lines, f.line)
		logf("context: POST /context-pack (full) at %d clients, beside the same reads on a bare server", c)
		var answer atomic.Int64
		err := b.measure(f.line, func() (sample, error) {
			return b.contextFullRun(b.svcAddr, c, "/api/v1/context-pack", fasthttp.HeaderAuthorization, "Bearer "+b.context.Key, svcBody, func(body []byte) error {
				if !bytes.Contains(body, marker) {
					return fmt.Errorf("an answer without the version %s (the capsule changed?): %s", first.version, truncate(string(body), 300))
				}
				answer.Store(int64(len(body)))
				return nil
			})
		}, func() (sample, error) {
			task := []byte(cl.task)
			return b.contextFullRun(b.baseAddr, c, "/context-pack", "X-Workspace-Id", b.context.WorkspaceID, svcBody, func(body []byte) error {
				if !bytes.Contains(body, task) {
					return fmt.Errorf("the bare read did not answer the task's scope: %s", truncate(string(body), 300))
				}
				return nil
			})
		})
		f.answerBytes = int(answer.Load())
		if err != nil {
			return err
		}
	}

	logf("context: delta turns at 1 client (an event added to the scope, then POST /context-pack delta), %d runs", b.s.Runs)
	for r := 1; r <= b.s.Runs; r++ {
		if err := b.ctx.Err(); err != nil {
			return err
		}
		b.prepareRun()
		before, err := b.countEvents(b.context.WorkspaceID)
		if err != nil {
			return err
		}
		s, turns, posts, err := b.contextTurns(cl, b.nextTag("ctx-turn"))
		if err != nil {
			return err
		}
		after, err := b.countEvents(b.context.WorkspaceID)
		if err != nil {
			return err
		}
		cl.turnPosts += posts
		cl.turnEvents += after - before
		cl.deltaRuns = append(cl.deltaRuns, s)
		cl.turns = append(cl.turns, turns...)
		logf("  context delta run %d/%d: %s; %d turns, tokens saved median %.1f%%", r, b.s.Runs, s, len(turns),
			100*median(turns, contextTurn.saved))
	}
	if cl.turnEvents != cl.turnPosts {
		cl.notes = append(cl.notes, fmt.Sprintf("the delta runs posted %d events but the workspace's ledger grew by %d", cl.turnPosts, cl.turnEvents))
	}
	return nil
}

// contextScene adds what an agent's task has around it: decisions on the initiative
// (pending of each urgency, decided ones) and artifacts on the task and the initiative.
func (b *bench) contextScene(cl *contextResult) error {
	base := "http://" + b.svcAddr + "/api/v1"
	tag := b.nextTag("ctx-scene")
	n := 0
	post := func(path, body string) (string, error) {
		n++
		status, raw, err := b.post(base+path, b.context.Key, fmt.Sprintf("%s-%d", tag, n), body)
		if err != nil {
			return "", err
		}
		if status != http.StatusCreated && status != http.StatusOK {
			return "", fmt.Errorf("POST %s: %d %s", path, status, truncate(raw, 300))
		}
		return raw, nil
	}
	urgencies := []string{"critical", "urgent", "urgent", "standard", "standard", "standard", "standard", "standard", "deferred", "standard", "urgent", "standard"}
	for i, u := range urgencies {
		if _, err := post("/decisions", fmt.Sprintf(`{"title":"Status page question %d: pick the incident severity shown to the public","summary":"The page shows incidents from severity 2 up; confirm or lower the bar.","urgency":%q,"initiative_id":%q}`,
			i+1, u, cl.initiative)); err != nil {
			return err
		}
	}
	for i, verb := range []string{"approve", "approve", "approve", "decline"} {
		raw, err := post("/decisions", fmt.Sprintf(`{"title":"Decided %d: host the status page apart from the API","initiative_id":%q}`, i+1, cl.initiative))
		if err != nil {
			return err
		}
		var d struct {
			Decision struct {
				ID string `json:"id"`
			} `json:"decision"`
		}
		if err := decodeData([]byte(raw), &d); err != nil {
			return err
		}
		if _, err := post("/decisions/"+d.Decision.ID+"/"+verb, `{"note":"Agreed in the weekly review."}`); err != nil {
			return err
		}
	}
	for i := range 8 {
		entity, id := "task", cl.task
		if i >= 6 {
			entity, id = "initiative", cl.initiative
		}
		if _, err := post("/artifacts", fmt.Sprintf(`{"name":"Status page note %d","artifact_type":"document","entity_type":%q,"entity_id":%q,"artifact_url":"https://example.com/status-page/notes/%d"}`,
			i+1, entity, id, i+1)); err != nil {
			return err
		}
	}
	return nil
}

// contextSeed grows the context workspace's ledger to ContextEvents events through the
// API (unmeasured), then refreshes the planner's statistics.
func (b *bench) contextSeed(cl *contextResult) error {
	have, err := b.countEvents(b.context.WorkspaceID)
	if err != nil {
		return err
	}
	plan := contextSeedPlan(b.s.ContextEvents - have)
	start := time.Now()
	if plan.work > 0 {
		logf("seeding %d work items (the context workspace) through POST /work", plan.work)
		s := runLoad(b.ctx, b.svcAddr, seedClients, 0, 30*time.Minute, b.createWork(b.context.Key, b.nextTag("ctx-seed"), plan.work, nil))
		if s.Errors > 0 || s.Count < plan.work {
			return fmt.Errorf("seeding the context workspace: %d of %d created, %d errors (first: %s)", s.Count, plan.work, s.Errors, s.FirstErr)
		}
	}
	if plan.decisions > 0 {
		if err := b.seedPosts("decisions outside the initiative (the context workspace)", b.context, "/decisions", plan.decisions, false, func(i int) []byte {
			return fmt.Appendf(nil, `{"title":"Approve vendor invoice %d","shape":"budget_approval","urgency":"standard"}`, i)
		}); err != nil {
			return err
		}
	}
	if plan.handoffs > 0 {
		if err := b.seedPosts("open handoffs (the context workspace)", b.context, "/handoffs", plan.handoffs, false, func(i int) []byte {
			return fmt.Appendf(nil, `{"handoff_key":"case-%d","from_stage_key":"intake","to_stage_key":"triage","title":"Case %d: intake to triage"}`, i, i)
		}); err != nil {
			return err
		}
	}
	cl.seeded = plan.work + plan.decisions + plan.handoffs
	if err := b.analyze(); err != nil {
		return err
	}
	if _, err := b.db.Exec(b.ctx, "VACUUM ANALYZE decisions, handoffs, artifacts"); err != nil {
		return err
	}
	cl.seedTook = time.Since(start)
	if cl.events, err = b.countEvents(b.context.WorkspaceID); err != nil {
		return err
	}
	logf("context: the workspace holds %d events (%d seeded in %s)", cl.events, cl.seeded, cl.seedTook.Round(time.Second))
	return nil
}

func (b *bench) countEvents(ws string) (int, error) {
	var n int
	err := b.db.QueryRow(b.ctx, `SELECT count(*) FROM ledger_events WHERE workspace_id = $1`, ws).Scan(&n)
	return n, err
}

// contextBody is a POST /context-pack body for the task: delivery_mode mode, against base
// when it is not "".
func contextBody(ws, task, mode, base string) []byte {
	b := fmt.Appendf(nil, `{"workspace_id":%q,"task_id":%q,"delivery_mode":%q,"max_payload_tokens":%d,"reader_tokenizer":%q`,
		ws, task, mode, contextBudget, contextTokenizer)
	if base != "" {
		b = fmt.Appendf(b, `,"acknowledged_context_version":%q`, base)
	}
	return append(b, '}')
}

// contextChecked is a text the harness checked, with its tokens.
type contextChecked struct {
	contextText
	tokens int
}

// contextFirst asks for the full capsule once (unmeasured) and checks it: its sha256 is
// its version, its bytes and tokens are the accounting's.
func (b *bench) contextFirst(body []byte) (contextChecked, error) {
	status, raw, err := b.post("http://"+b.svcAddr+"/api/v1/context-pack", b.context.Key, "", string(body))
	if err != nil {
		return contextChecked{}, err
	}
	if status != http.StatusOK {
		return contextChecked{}, fmt.Errorf("POST /context-pack: %d %s", status, truncate(raw, 300))
	}
	var a contextAnswer
	if err := decodeData([]byte(raw), &a); err != nil {
		return contextChecked{}, err
	}
	t, err := rebuildContext(nil, a.Transfer)
	if err != nil {
		return contextChecked{}, err
	}
	return checkAccounting(t, a)
}

// checkAccounting counts t's tokens and checks them and its bytes against the answer's
// accounting.
func checkAccounting(t contextText, a contextAnswer) (contextChecked, error) {
	tok, err := contextpack.Tokenizer(contextTokenizer)
	if err != nil {
		return contextChecked{}, err
	}
	n := tok.Count(t.text)
	acc := a.Delivery.Accounting
	if acc.Bytes != len(t.text) || acc.Tokens == nil || *acc.Tokens != n {
		return contextChecked{}, fmt.Errorf("the accounting says %d bytes and %v tokens, the text has %d bytes and %d tokens", acc.Bytes, acc.Tokens, len(t.text), n)
	}
	return contextChecked{contextText: t, tokens: n}, nil
}

// contextFullRun posts body to addr's path at clients clients, check seeing every answer.
func (b *bench) contextFullRun(addr string, clients int, path, header, value string, body []byte, check func([]byte) error) (sample, error) {
	var bad atomic.Value
	uri := "http://" + addr + path
	s := runLoad(b.ctx, addr, clients, b.s.Warmup, b.s.Duration, workload{
		prepare: func(_ int, req *fasthttp.Request) bool {
			req.Header.SetMethod(fasthttp.MethodPost)
			req.SetRequestURI(uri)
			req.Header.Set(header, value)
			req.Header.SetContentType("application/json")
			req.SetBodyRaw(body)
			return true
		},
		ok: func(status int) bool { return status == fasthttp.StatusOK },
		onResponse: func(_ int, body []byte) {
			if err := check(body); err != nil {
				bad.CompareAndSwap(nil, err)
			}
		},
	})
	if err, _ := bad.Load().(error); err != nil {
		return s, err
	}
	return s, sampleErr(s)
}

// contextTurns is one run of delta turns, one client: a full text first (the base), then
// turn after turn an event added to the scope and a delta against the text held, through
// the warm-up, then through the window and on until contextMinTurns turns were measured.
// Only the delta's request is timed; every delta is rebuilt and checked. It returns the
// sample, the measured turns and the events it posted (warm-up included).
func (b *bench) contextTurns(cl *contextResult, tag string) (sample, []contextTurn, int, error) {
	hc := &fasthttp.HostClient{Addr: b.svcAddr, MaxConns: 1, ReadTimeout: time.Minute, WriteTimeout: time.Minute,
		NoDefaultUserAgentHeader: true, DisablePathNormalizing: true}
	defer hc.CloseIdleConnections()
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	auth := "Bearer " + b.context.Key
	api := "http://" + b.svcAddr + "/api/v1"
	do := func(path, idem string, body []byte, want int) ([]byte, time.Duration, error) {
		req.Reset()
		req.Header.SetMethod(fasthttp.MethodPost)
		req.SetRequestURI(api + path)
		req.Header.Set(fasthttp.HeaderAuthorization, auth)
		req.Header.SetContentType("application/json")
		if idem != "" {
			req.Header.Set("Idempotency-Key", idem)
		}
		req.SetBodyRaw(body)
		t0 := time.Now()
		err := hc.Do(req, resp)
		d := time.Since(t0)
		if err != nil {
			return nil, d, err
		}
		if resp.StatusCode() != want {
			return nil, d, fmt.Errorf("POST %s: %d %s", path, resp.StatusCode(), truncate(string(resp.Body()), 300))
		}
		return resp.Body(), d, nil
	}
	tok, err := contextpack.Tokenizer(contextTokenizer)
	if err != nil {
		return sample{}, nil, 0, err
	}
	raw, _, err := do("/context-pack", "", contextBody(b.context.WorkspaceID, cl.task, "full", ""), http.StatusOK)
	if err != nil {
		return sample{}, nil, 0, err
	}
	var a contextAnswer
	if err := decodeData(raw, &a); err != nil {
		return sample{}, nil, 0, err
	}
	held, err := rebuildContext(nil, a.Transfer)
	if err != nil {
		return sample{}, nil, 0, err
	}

	var (
		lat   []time.Duration
		turns []contextTurn
		posts int
	)
	start := time.Now()
	from, end := start.Add(b.s.Warmup), start.Add(b.s.Warmup+b.s.Duration)
	last := from
	for i := 0; ; i++ {
		if err := b.ctx.Err(); err != nil {
			return sample{}, nil, posts, err
		}
		if !time.Now().Before(end) && len(lat) >= contextMinTurns {
			break
		}
		// One event in the scope: a decision on the initiative, or an artifact on the task.
		event := fmt.Appendf(nil, `{"title":"Turn %s-%d: confirm the wording of the incident banner","initiative_id":%q}`, tag, i, cl.initiative)
		path := "/decisions"
		if i%2 == 1 {
			path = "/artifacts"
			event = fmt.Appendf(nil, `{"name":"Turn %s-%d: screenshot of the status page","artifact_type":"document","entity_type":"task","entity_id":%q,"artifact_url":"https://example.com/status-page/%s/%d.png"}`,
				tag, i, cl.task, tag, i)
		}
		if _, _, err := do(path, fmt.Sprintf("%s-%d", tag, i), event, http.StatusCreated); err != nil {
			return sample{}, nil, posts, err
		}
		posts++
		t0 := time.Now()
		raw, d, err := do("/context-pack", "", contextBody(b.context.WorkspaceID, cl.task, "delta", held.version), http.StatusOK)
		if err != nil {
			return sample{}, nil, posts, err
		}
		answerBytes := len(raw)
		var a contextAnswer
		if err := decodeData(raw, &a); err != nil {
			return sample{}, nil, posts, err
		}
		if a.Transfer == nil || a.Transfer.Mode != "delta" || !a.Delivery.BaseVerified {
			return sample{}, nil, posts, fmt.Errorf("turn %d was answered in full, not with a delta (reasons: %s)", i, strings.Join(a.Delivery.Reasons, "; "))
		}
		next, err := rebuildContext(&held, a.Transfer)
		if err != nil {
			return sample{}, nil, posts, fmt.Errorf("turn %d: %w", i, err)
		}
		held = next
		if t0.Before(from) {
			continue
		}
		if len(lat) == 0 {
			from = t0 // the span starts with the first measured turn
		}
		lat = append(lat, d)
		last = time.Now()
		turns = append(turns, contextTurn{AnswerBytes: answerBytes, DeltaBytes: len(a.Transfer.Operations),
			DeltaTokens: tok.Count(string(a.Transfer.Operations)), TextBytes: len(next.text), TextTokens: tok.Count(next.text)})
	}
	s := sample{Count: len(lat), Window: last.Sub(from), Issued: posts}
	if s.Window > 0 {
		s.Rate = float64(s.Count) / s.Window.Seconds()
	}
	s.P50, s.P99 = percentiles(lat)
	return s, turns, posts, nil
}

// --- the report ---------------------------------------------------------------------------

// contextTable is the context line's figures beside its targets, in Markdown.
func (b *bench) contextTable() string {
	cl := b.ctxLine
	if cl == nil || (len(cl.deltaRuns) == 0 && !slices.ContainsFunc(cl.full, func(f *contextFull) bool { return len(f.line.Service) > 0 })) {
		return ""
	}
	var w strings.Builder
	target := "p99 < " + msec(contextTargetP99) + " ms"
	w.WriteString("| transfer | clients | p50 / p99 (ms) | answer (bytes) | capsule text or delta (bytes) | its tokens (" + string(contextTokenizer) + ") | target | verdict |\n")
	w.WriteString("|---|---:|---:|---:|---:|---:|---|---|\n")
	for _, f := range cl.full {
		if len(f.line.Service) == 0 {
			continue
		}
		p99 := median(f.line.Service, p99Of)
		fmt.Fprintf(&w, "| full: the capsule text | %d | %s / **%s** | %s | %s | %s | %s | %s |\n", f.clients,
			msec(median(f.line.Service, p50Of)), msec(p99), thousands(f.answerBytes), thousands(f.textBytes), thousands(f.toks), target,
			holds(p99 < contextTargetP99))
	}
	if len(cl.deltaRuns) > 0 && len(cl.turns) > 0 {
		p99 := median(cl.deltaRuns, p99Of)
		fmt.Fprintf(&w, "| delta: one event added since the text held | 1 | %s / **%s** | %s | %s | %s | %s | %s |\n",
			msec(median(cl.deltaRuns, p50Of)), msec(p99), thousands(medianInt(cl.turns, func(t contextTurn) int { return t.AnswerBytes })),
			thousands(medianInt(cl.turns, func(t contextTurn) int { return t.DeltaBytes })),
			thousands(medianInt(cl.turns, func(t contextTurn) int { return t.DeltaTokens })), target, holds(p99 < contextTargetP99))
		saved, worst := cl.saved()
		bytesSaved := median(cl.turns, func(t contextTurn) float64 { return 1 - float64(t.DeltaBytes)/float64(max(t.TextBytes, 1)) })
		fmt.Fprintf(&w, "| tokens saved by the delta | 1 | – | – | %s%% of the text's %s bytes | **%s%%** of the text's %s tokens (worst turn %s%%) | ≥ %s%% | %s |\n",
			pct(bytesSaved), thousands(medianInt(cl.turns, func(t contextTurn) int { return t.TextBytes })),
			pct(saved), thousands(medianInt(cl.turns, func(t contextTurn) int { return t.TextTokens })), pct(worst), pct(contextTargetSaved),
			holds(saved >= contextTargetSaved))
	}
	return w.String()
}

// saved is the median and the least share of the text's tokens the measured deltas saved.
func (cl *contextResult) saved() (med, worst float64) {
	if len(cl.turns) == 0 {
		return 0, 0
	}
	worst = 1
	for _, t := range cl.turns {
		worst = min(worst, t.saved())
	}
	return median(cl.turns, contextTurn.saved), worst
}

func medianInt[E any](xs []E, f func(E) int) int {
	return int(median(xs, func(x E) int64 { return int64(f(x)) }))
}

// pct writes a share as a percentage with one decimal.
func pct(f float64) string { return strconv.FormatFloat(100*f, 'f', 1, 64) }

// contextSection is the context line's part of the report.
func (b *bench) contextSection() string {
	t := b.contextTable()
	if t == "" {
		return ""
	}
	cl := b.ctxLine
	var w strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&w, format, args...) }
	p("\n**Context packs** (the `context` line; POST /context-pack, `max_payload_tokens` %d, `reader_tokenizer` %s): the capsule of a task "+
		"of a committed initiative, in a workspace of %s ledger events. *Full*: `delivery_mode` full at each client count (its ratio "+
		"to the bare read is in the table above); the answer holds the capsule and its text. *Delta*: one client, turn after turn an "+
		"event is added to the scope (a decision on the initiative, or an artifact on the task, in turn; not timed), then a delta "+
		"against the text it holds is asked for (timed); every delta is rebuilt from the text held and its sha256 checked against "+
		"its version. Tokens are counted with %s over the operations' JSON as served and over the text it rebuilds. Medians of %d "+
		"runs (p50 / p99) and of every measured turn (bytes, tokens). The targets are stated by the harness (no limit exists for "+
		"them): a p99 under %s ms, full or delta, and a delta that saves at least %s%% of the text's tokens.\n\n",
		contextBudget, contextTokenizer, thousands(cl.events), contextTokenizer, b.s.Runs, msec(contextTargetP99), pct(contextTargetSaved))
	w.WriteString(t)
	p("\n* context: the scope is set up before the seeding (an initiative proposed through the fake model and committed, 12 pending "+
		"and 4 decided decisions on it, 6 artifacts on the task and 2 on the initiative); %s events seeded through the API in %s "+
		"(70%% POST /work, 20%% POST /decisions and 10%% POST /handoffs, outside the initiative; VACUUM ANALYZE after).\n",
		thousands(cl.seeded), cl.seedTook.Round(time.Second))
	if len(cl.turns) > 0 {
		p("* context: %d delta turns measured; the delta runs posted %d events (warm-up included) and the workspace's ledger grew by %d.\n",
			len(cl.turns), cl.turnPosts, cl.turnEvents)
	}
	for _, n := range cl.notes {
		p("* context: %s\n", n)
	}
	p("* context: the line took %s.\n", cl.took.Round(time.Second))
	return w.String()
}

// contextHistory is the context line's part of a history row.
func (b *bench) contextHistory() string {
	cl := b.ctxLine
	if cl == nil {
		return ""
	}
	var parts []string
	for _, f := range cl.full {
		if len(f.line.Service) > 0 {
			parts = append(parts, fmt.Sprintf("full p99 @%d %s ms", f.clients, msec(median(f.line.Service, p99Of))))
		}
	}
	if len(cl.deltaRuns) > 0 && len(cl.turns) > 0 {
		saved, _ := cl.saved()
		parts = append(parts, fmt.Sprintf("delta p99 %s ms, %s%% of the tokens saved", msec(median(cl.deltaRuns, p99Of)), pct(saved)))
	}
	if len(parts) == 0 {
		return ""
	}
	return "context: " + strings.Join(parts, ", ")
}

// --- the baseline -------------------------------------------------------------------------

// baselineContextRoutes adds the context line's limit: the same snapshot reads as the
// service's (the store's own ReadContextSources, from a store over the same database),
// the sources answered as JSON, without a capsule.
func baselineContextRoutes(app *fiber.App, db *store.DB) {
	app.Post("/context-pack", func(c *fiber.Ctx) error {
		ws := c.Get("X-Workspace-Id")
		var in struct {
			InitiativeID *string `json:"initiative_id"`
			WorkstreamID *string `json:"workstream_id"`
			TaskID       *string `json:"task_id"`
		}
		if err := json.Unmarshal(c.Body(), &in); err != nil {
			return c.Status(fiber.StatusBadRequest).JSON(fiber.Map{"error": err.Error()})
		}
		src, err := db.ReadContextSources(c.UserContext(), ws, accountable.ContextScopeRequest{InitiativeID: in.InitiativeID,
			WorkstreamID: in.WorkstreamID, TaskID: in.TaskID})
		if err != nil {
			return err
		}
		return c.JSON(baseEnvelope{Data: src, Meta: baseMeta{APIVersion: "1", WorkspaceID: ws}})
	})
}
