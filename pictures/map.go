// Package pictures draws the service's resources as SVG pictures, the same bytes for the
// same data: the operating map as a graph (laid out by Graphviz's dot, compiled to
// WebAssembly: github.com/goccy/go-graphviz) and a launch as a timeline (plain SVG).
// It imports the root package, the standard library, the layout library and the
// sizedlru cache (of the maps drawn) only.
package pictures

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/goccy/go-graphviz"
	"golang.org/x/sync/singleflight"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/sizedlru"
)

// MediaType is the media type of the pictures.
const MediaType = "image/svg+xml"

// The Graphviz context is made once (its WebAssembly module is compiled when the library's
// package is initialised, about 0.1 s with its compilation cache and 1.7 s without; a
// context takes under a millisecond more) and serves one rendering at a time: the
// library's module instance is shared and not safe for concurrent calls. A request waits
// for its turn only as long as its context lasts (a layout, once begun, runs to its end).
var (
	gvTurn = make(chan struct{}, 1)
	gv     *graphviz.Graphviz
)

// renderDOT lays out the DOT text with dot and returns its SVG.
func renderDOT(ctx context.Context, dot []byte) ([]byte, error) {
	select {
	case gvTurn <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-gvTurn }()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if gv == nil {
		g, err := graphviz.New(context.Background())
		if err != nil {
			return nil, fmt.Errorf("pictures: graphviz: %w", err)
		}
		gv = g
	}
	graph, err := graphviz.ParseBytes(dot)
	if err != nil {
		return nil, fmt.Errorf("pictures: graphviz: parse: %w", err)
	}
	defer graph.Close()
	var out bytes.Buffer
	if err := gv.Render(ctx, graph, graphviz.SVG, &out); err != nil {
		return nil, fmt.Errorf("pictures: graphviz: render: %w", err)
	}
	return out.Bytes(), nil
}

// Colours of the map; each is doubled by text (a count in the edge's label, the state in
// the cluster's label), so that no colour is the only signal.
const (
	colourBreached = "#b42318" // red: some handoffs breached their SLA
	colourOpen     = "#b54708" // amber: some are open
	colourSettled  = "#475467" // grey: all fulfilled or cancelled
	colourMuted    = "#98a2b3"
	fontName       = "Helvetica,Arial,sans-serif"
	// mapFontName is the map's font: one family Graphviz knows the metrics of, so that its
	// layout leaves room for each label as a browser draws it (Helvetica, or a font of the
	// same widths: Arial, Liberation Sans). Given a list (fontName), Graphviz falls back to
	// Times's narrower widths, and labels overran their boxes.
	mapFontName = "Helvetica"
)

// OperatingMap draws the operating map: each process a cluster of its stages (solid border
// for a confirmed process, dashed for one discovered or proposed and not yet confirmed,
// dotted for one deprecated or retired; its state in its label), and each handoff edge an
// arrow between its stages labelled with its handoffs, open, breached and median time to
// fulfil. Processes are ordered by id, stages as their revision lists them, edges by their
// stage keys, so the same map gives the same bytes.
func OperatingMap(ctx context.Context, m accountable.OperatingMap) ([]byte, error) {
	return drawnMaps.draw(ctx, OperatingMapDOT(m))
}

// Drawn maps are kept by the SHA-256 of their DOT text, the whole input of the layout, so
// a map unchanged since it was last drawn is answered without a layout (1.5 to 5 s for the
// largest drawn), and the same map asked for at once is laid out once.
const (
	drawnMapsBytes  = 64 << 20 // the largest drawn map is about 3 MB
	drawnMapTimeout = time.Minute
)

var drawnMaps = newMapDrawings(drawnMapsBytes)

type mapDrawings struct {
	svgs    *sizedlru.Cache[[sha256.Size]byte, []byte]
	drawing singleflight.Group
	layouts atomic.Int64 // layouts run (for the tests)
}

func newMapDrawings(maxBytes int) *mapDrawings {
	return &mapDrawings{svgs: sizedlru.New[[sha256.Size]byte, []byte](maxBytes, 0, func(b []byte) int { return len(b) }, time.Now)}
}

// draw answers the SVG of dot. A layout begun runs to its end and is kept even when every
// caller waiting for it has gone (their contexts ended): the next asks for the same map.
func (d *mapDrawings) draw(ctx context.Context, dot []byte) ([]byte, error) {
	key := sha256.Sum256(dot)
	if svg, ok := d.svgs.Get(key); ok {
		return svg, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err // no layout for a caller already gone
	}
	ch := d.drawing.DoChan(string(key[:]), func() (any, error) {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drawnMapTimeout)
		defer cancel()
		d.layouts.Add(1)
		svg, err := renderDOT(lctx, dot)
		if err == nil {
			d.svgs.Add(key, svg)
		}
		return svg, err
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.([]byte), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// processStyle is the border and the words of a process's lifecycle state.
func processStyle(s accountable.ProcessState) (style, words string) {
	switch s {
	case accountable.ProcessDiscovered, accountable.ProcessProposed:
		return "dashed", string(s) + ", not confirmed"
	case accountable.ProcessDeprecated, accountable.ProcessRetired:
		return "dotted", string(s)
	}
	if s == accountable.ProcessConfirmed {
		return "solid", string(s)
	}
	return "solid", string(s) + ", confirmed"
}

// The bounds of a drawn map: dot's layout grows faster than linearly (200 processes of
// five stages and 1,000 edges took 14 s with its defaults, 1.4 s with its crossing
// minimisation and network simplex bounded, which larger maps get), so a larger map is
// drawn in part, its busiest edges and its first processes by id, and its heading says so.
const (
	maxDrawnEdges     = 1000
	maxDrawnProcesses = 300
	boundedFrom       = 100 // edges, or stages/5, from which the layout's effort is bounded
)

// OperatingMapDOT is the map in Graphviz's DOT language (what OperatingMap lays out).
func OperatingMapDOT(m accountable.OperatingMap) []byte {
	procs := slices.Clone(m.Processes)
	slices.SortStableFunc(procs, func(a, b accountable.MapProcess) int { return strings.Compare(a.ID, b.ID) })
	edges := slices.Clone(m.HandoffEdges)
	byKeys := func(a, b accountable.HandoffEdge) int {
		if c := strings.Compare(a.FromStageKey, b.FromStageKey); c != 0 {
			return c
		}
		return strings.Compare(a.ToStageKey, b.ToStageKey)
	}
	var omitted []string
	if len(edges) > maxDrawnEdges {
		slices.SortStableFunc(edges, func(a, b accountable.HandoffEdge) int {
			if a.Handoffs != b.Handoffs {
				return b.Handoffs - a.Handoffs
			}
			return byKeys(a, b)
		})
		omitted = append(omitted, fmt.Sprintf("the %d busiest of %d handoff edges", maxDrawnEdges, len(edges)))
		edges = edges[:maxDrawnEdges]
	}
	slices.SortStableFunc(edges, byKeys)
	if len(procs) > maxDrawnProcesses {
		omitted = append(omitted, fmt.Sprintf("the first %d of %d processes by id", maxDrawnProcesses, len(procs)))
		procs = procs[:maxDrawnProcesses]
	}
	stages := 0
	for _, p := range procs {
		stages += len(p.Stages)
	}

	var b strings.Builder
	b.WriteString("digraph operating_map {\n")
	title := mapTitle(len(m.Processes), m.HandoffEdges)
	if len(omitted) > 0 {
		title = append(title, "Drawn: "+strings.Join(omitted, " and ")+".")
	}
	fmt.Fprintf(&b, "  graph [rankdir=LR, fontname=%s, fontsize=11, nodesep=0.3, ranksep=0.6, labelloc=t, labeljust=l, label=%s];\n",
		quote(mapFontName), leftLines(title))
	if len(edges) >= boundedFrom || stages >= 5*boundedFrom {
		b.WriteString("  graph [mclimit=0.1, nslimit=2, nslimit1=2];\n")
	}
	fmt.Fprintf(&b, "  node [shape=box, style=\"rounded,filled\", fillcolor=\"#ffffff\", color=%s, fontname=%s, fontsize=10];\n",
		quote(colourSettled), quote(mapFontName))
	fmt.Fprintf(&b, "  edge [fontname=%s, fontsize=9];\n", quote(mapFontName))

	// Nodes: one per stage of each process (n<process>_<stage>). An edge joins its stage
	// keys within the first process that has both, else the first stages of those keys;
	// a key no process has is drawn outside every process.
	type place struct{ proc, stage int }
	first := map[string]string{}
	inProc := make([]map[string]string, len(procs))
	for i, p := range procs {
		style, words := processStyle(p.LifecycleState)
		label := fmt.Sprintf("%s\n%s · %s · %d episode%s", oneLine(p.Name), words, p.ProvenanceMode, p.Episodes, plural(p.Episodes))
		fmt.Fprintf(&b, "  subgraph cluster_p%d {\n    graph [label=%s, style=%s, color=%s, penwidth=1.4, id=%s];\n",
			i, quote(label), quote(style), quote(colourSettled), quote("process-"+p.ID))
		inProc[i] = map[string]string{}
		for j, s := range p.Stages {
			id := fmt.Sprintf("n%d_%d", i, j)
			if _, seen := inProc[i][s.Key]; seen {
				continue
			}
			inProc[i][s.Key] = id
			if _, ok := first[s.Key]; !ok {
				first[s.Key] = id
			}
			name := s.Name
			if name == "" {
				name = s.Key
			}
			fmt.Fprintf(&b, "    %s [label=%s];\n", id, quote(oneLine(name)+"\n("+oneLine(s.Key)+")"))
		}
		if len(p.Stages) == 0 {
			fmt.Fprintf(&b, "    n%d_none [label=\"no stages\", style=dashed, fontcolor=%s, color=%s];\n", i, quote(colourMuted), quote(colourMuted))
		}
		b.WriteString("  }\n")
	}
	var loose []string
	for _, e := range edges {
		for _, k := range []string{e.FromStageKey, e.ToStageKey} {
			if _, ok := first[k]; !ok {
				id := fmt.Sprintf("u%d", len(loose))
				first[k] = id
				loose = append(loose, k)
				fmt.Fprintf(&b, "  %s [label=%s, style=\"rounded,dashed\", color=%s];\n", id, quote(oneLine(k)+"\n(in no process)"), quote(colourMuted))
			}
		}
	}
	for _, e := range edges {
		from, to := first[e.FromStageKey], first[e.ToStageKey]
		for i := range procs {
			f, okf := inProc[i][e.FromStageKey]
			t, okt := inProc[i][e.ToStageKey]
			if okf && okt {
				from, to = f, t
				break
			}
		}
		colour, style := colourSettled, "solid"
		switch {
		case e.Breached > 0:
			colour = colourBreached
		case e.Open > 0:
			colour = colourOpen
		default:
			style = "dashed"
		}
		width := 1 + math.Min(4, math.Log2(float64(max(e.Handoffs, 1))))
		fmt.Fprintf(&b, "  %s -> %s [label=%s, color=%s, fontcolor=%s, style=%s, penwidth=%.2f, id=%s];\n",
			from, to, quote(edgeLabel(e)), quote(colour), quote(colour), style, width,
			quote("edge-"+oneLine(e.FromStageKey)+"-"+oneLine(e.ToStageKey)))
	}
	if len(procs) == 0 && len(edges) == 0 {
		b.WriteString("  empty [label=\"No processes or handoffs yet\", style=\"rounded,dashed\"];\n")
	}
	b.WriteString("}\n")
	return []byte(b.String())
}

// mapTitle is the map's heading: its size and how to read it, line by line.
func mapTitle(procs int, edges []accountable.HandoffEdge) []string {
	var handoffs, open, breached int
	for _, e := range edges {
		handoffs, open, breached = handoffs+e.Handoffs, open+e.Open, breached+e.Breached
	}
	return []string{
		fmt.Sprintf("Operating map: %d process%s, %d handoff edge%s", procs, pluralES(procs), len(edges), plural(len(edges))),
		fmt.Sprintf("(%d handoffs, %d open, %d breached)", handoffs, open, breached),
		"Process borders: solid = confirmed,",
		"dashed = discovered or proposed (not confirmed),",
		"dotted = deprecated or retired.",
		"Arrows: red = some breached their SLA, amber = some open,",
		"grey dashed = all closed; each label gives the counts.",
	}
}

// leftLines writes lines as one DOT string whose lines are left-justified (each ends in
// Graphviz's \l escape; the text of each is quoted as quote does).
func leftLines(lines []string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, l := range lines {
		q := quote(strings.ReplaceAll(l, "\n", " "))
		b.WriteString(q[1 : len(q)-1])
		b.WriteString(`\l`)
	}
	b.WriteByte('"')
	return b.String()
}

// edgeLabel says an edge's counts in words.
func edgeLabel(e accountable.HandoffEdge) string {
	parts := []string{fmt.Sprintf("%d handoff%s", e.Handoffs, plural(e.Handoffs)), fmt.Sprintf("%d open", e.Open)}
	if e.Breached > 0 {
		parts = append(parts, fmt.Sprintf("! %d breached", e.Breached))
	} else {
		parts = append(parts, "0 breached")
	}
	if e.MedianFulfilmentSeconds != nil {
		parts = append(parts, "median fulfil "+Duration(*e.MedianFulfilmentSeconds))
	}
	return strings.Join(parts, "\n")
}

// Duration writes a number of seconds briefly: 45s, 12m, 3h 20m, 2d 4h.
func Duration(seconds int64) string {
	s := max(seconds, 0)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		if s%60 == 0 || s >= 600 {
			return fmt.Sprintf("%dm", s/60)
		}
		return fmt.Sprintf("%dm %ds", s/60, s%60)
	case s < 86400:
		if m := s % 3600 / 60; m != 0 {
			return fmt.Sprintf("%dh %dm", s/3600, m)
		}
		return fmt.Sprintf("%dh", s/3600)
	}
	if h := s % 86400 / 3600; h != 0 {
		return fmt.Sprintf("%dd %dh", s/86400, h)
	}
	return fmt.Sprintf("%dd", s/86400)
}

// quote writes s as a DOT string: backslashes and quotes escaped (so that no escape of
// Graphviz's, \N or \l, is read in data), line breaks as \n.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r < 0x20 || r == 0x7f:
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// oneLine folds the line breaks and other control characters of data into spaces, and
// cuts it to 80 characters.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if r := []rune(s); len(r) > 80 {
		s = string(r[:79]) + "…"
	}
	return s
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func pluralES(n int) string {
	if n == 1 {
		return ""
	}
	return "es"
}
