package harness

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ScaleSVG is the file, beside RESULTS.md, that holds the curves of the
// scale scenario (written by RenderScaleSVG).
const ScaleSVG = "scale.svg"

// scaleSeries is the scale figures of one library, pivoted: for each
// metric (with its unit), the figure at each size.
type scaleSeries struct {
	lib     string
	metrics []string                  // "metric|unit", in order of first appearance
	at      map[string]map[int]Figure // metric|unit → size → figure
	sizes   []int
}

// scalePart returns, for each report with figures of one part of the
// scale scenario (params ending in one of suffixes: " keys compacted",
// " waiter(s)"), those figures by size.
func scalePart(reports []*Report, suffixes ...string) []scaleSeries {
	var out []scaleSeries
	for _, r := range reports {
		s := scaleSeries{lib: r.Lib, at: map[string]map[int]Figure{}}
		for _, f := range r.Figures {
			if f.Scenario != Scale {
				continue
			}
			n, ok := scaleSize(f.Param, suffixes...)
			if !ok {
				continue
			}
			k := f.Metric + "|" + f.Unit
			if s.at[k] == nil {
				s.at[k] = map[int]Figure{}
				s.metrics = append(s.metrics, k)
			}
			s.at[k][n] = f
			if !slices.Contains(s.sizes, n) {
				s.sizes = append(s.sizes, n)
			}
		}
		if len(s.metrics) > 0 {
			slices.Sort(s.sizes)
			out = append(out, s)
		}
	}
	return out
}

// scaleSize reads the size in a param such as "10,000 idle keys".
func scaleSize(param string, suffixes ...string) (int, bool) {
	for _, suf := range suffixes {
		if v, ok := strings.CutSuffix(param, suf); ok {
			n, err := strconv.Atoi(strings.ReplaceAll(v, ",", ""))
			return n, err == nil
		}
	}
	return 0, false
}

// keySeriesList are the series of idle keys, as the tables and the plot
// show them: the ends of their params, and what each is.
var keySeriesList = []struct {
	name     string
	suffixes []string
	title    string
	text     string
}{
	{keysKept, []string{" " + keysKept}, "Keys in the collection",
		"N keys, each locked and unlocked once by the loaders within the idle age: nothing is compacted (dsync: `WithIdleAge(0)` in this " +
			"namespace), every document they left is there. Before each fresh Client, a loader locks and unlocks a random one of them; the " +
			"fresh Client's first Lock+Unlock is of that key, whose queue is live, with history: what a cron job meets when the job before it ran " +
			"moments ago. The peers run this series as they are (they compact nothing: redsync and etcd delete a lock's key at Unlock), " +
			"and the count of what their store keeps."},
	{keysCompacted, []string{" " + keysCompacted}, "Keys compacted",
		"N keys, each locked and unlocked once, then left idle past a short idle age (dsync: `WithIdleAge` of the row \"keys compacted once " +
			"idle for\", in this namespace only) while the scenario waits for the compaction; the fresh Client's first Lock+Unlock is of a " +
			"random one of them."},
	{keysOld, []string{" idle keys", " idle key"}, "Idle keys (one series: reports written before the two)",
		"An older report's one series: its keys compacted where its library compacted them (with `-idle-age`), in the collection where it did not."},
}

var waitersSuffixes = []string{" waiters", " waiter"}

// value returns the figure of metric (with unit) at size n, if measured.
func (s scaleSeries) value(metricUnit string, n int) (float64, bool) {
	f, ok := s.at[metricUnit][n]
	if !ok || f.Value == nil {
		return 0, false
	}
	return *f.Value, true
}

// renderScale writes the scale section's tables, its targets and the link
// to its plot.
func renderScale(p printf, reports []*Report) {
	p("![Scale: curves of the tables below](%s)\n\n", ScaleSVG)
	p("The curves: [%s](%s) (log x; first Lock+Unlock, status page and documents on a log y axis).\n\n", ScaleSVG, ScaleSVG)
	keys := map[string][]scaleSeries{}
	for _, ks := range keySeriesList {
		series := scalePart(reports, ks.suffixes...)
		if len(series) == 0 {
			continue
		}
		keys[ks.name] = series
		p("### %s\n\n%s\n\n", ks.title, ks.text)
		scaleTable(p, series, ks.name, thousands)
	}
	waiters := scalePart(reports, waitersSuffixes...)
	if len(waiters) > 0 {
		p("### Waiting processes\n\n")
		scaleTable(p, waiters, "waiters", strconv.Itoa)
	}
	p("Measured outside run.sh, with the commands that print them (repeated runs with 64 waiters): [scale-notes.md](scale-notes.md).\n\n")
	scaleTargets(p, keys, waiters)
}

// scaleTable writes one part's figures: a row per library and metric, a
// column per size, and the growth from the smallest size to the largest.
func scaleTable(p printf, series []scaleSeries, what string, label func(int) string) {
	sizes := scaleSizes(series)
	p("| figure (%s →) |", what)
	for _, n := range sizes {
		p(" %s |", label(n))
	}
	p(" largest ÷ smallest |\n|---|%s---|\n", strings.Repeat("---|", len(sizes)))
	// A row per metric (in order of first appearance) and library, the
	// libraries of a metric side by side.
	notes := tableNotes{seen: map[string]bool{}}
	for _, k := range scaleMetrics(series) {
		for _, s := range series {
			if s.at[k] != nil {
				scaleRow(p, s, k, sizes, &notes)
			}
		}
	}
	notes.render(p)
}

// scaleSizes returns every size of the series, in order.
func scaleSizes(series []scaleSeries) []int {
	var sizes []int
	for _, s := range series {
		for _, n := range s.sizes {
			if !slices.Contains(sizes, n) {
				sizes = append(sizes, n)
			}
		}
	}
	slices.Sort(sizes)
	return sizes
}

// scaleMetrics returns the metrics of the series ("metric|unit"), in
// order of first appearance.
func scaleMetrics(series []scaleSeries) []string {
	var metrics []string
	for _, s := range series {
		for _, k := range s.metrics {
			if !slices.Contains(metrics, k) {
				metrics = append(metrics, k)
			}
		}
	}
	return metrics
}

// scaleRow writes the row of metric k ("metric|unit") of one library: its
// figure at each size and the growth. The figures' notes go to notes.
func scaleRow(p printf, s scaleSeries, k string, sizes []int, notes *tableNotes) {
	metric, unit, _ := strings.Cut(k, "|")
	lbl := s.lib + ": " + metric
	if unit != "" {
		lbl += " (" + unit + ")"
	}
	p("| %s |", lbl)
	var first, last *Figure
	for _, n := range sizes {
		f, ok := s.at[k][n]
		p(" %s |", cell(f, ok))
		if ok && f.Value != nil {
			if first == nil {
				first = &f
			}
			last = &f
		}
		if ok && f.Note != "" {
			// What does not apply says so once, not at each size.
			note := fmt.Sprintf("%s (%s): %s", s.lib, f.Param, f.Note)
			if f.Lacking {
				note = fmt.Sprintf("%s: —: %s", s.lib, f.Note)
			}
			notes.once(note)
		}
	}
	p(" %s |\n", growth(first, last))
}

// growth is a row's last figure divided by its first, "≥" if the last is
// a lower bound, "–" if there is no ratio to take.
func growth(first, last *Figure) string {
	switch {
	case first == nil || last == first || *first.Value == 0 || first.AtLeast:
		return "–"
	case last.AtLeast:
		return "≥ " + num(*last.Value / *first.Value)
	}
	return num(*last.Value / *first.Value)
}

// scaleFlat is how much more a waiter may send at 64 waiters than at 1
// for "flat": the noise of one 40 s count of one waiter.
const scaleFlat = 1.25

// A targetRow is one of issue 25's targets, what was measured and whether
// it passes.
type targetRow struct{ target, measured, result string }

// scaleTargets writes issue 25's targets, each with what dsync measured
// and whether it passes: the first Lock+Unlock in each series of idle
// keys, the documents in the compacted one, the waiters' commands.
func scaleTargets(p printf, keys map[string][]scaleSeries, waiters []scaleSeries) {
	var rows []targetRow
	for _, ks := range keySeriesList {
		for _, s := range keys[ks.name] {
			if !strings.HasPrefix(s.lib, "dsync") {
				continue
			}
			lib := s.lib + ", " + ks.name
			rows = append(rows, firstLockTarget(lib, s))
			if ks.name == keysCompacted {
				rows = append(rows, compactedDocsTarget(lib, s))
			}
		}
	}
	for _, s := range waiters {
		if strings.HasPrefix(s.lib, "dsync") {
			rows = append(rows, waitersTarget(s))
		}
	}
	if len(rows) == 0 {
		return
	}
	p("### Targets (issue 25)\n\n| target | measured | result |\n|---|---|---|\n")
	for _, r := range rows {
		p("| %s | %s | %s |\n", r.target, r.measured, r.result)
	}
	p("\n")
}

// firstLockTarget: in a series of idle keys of library lib (its name and
// the series'), a fresh Client's first Lock+Unlock at 100,000 keys costs
// at most twice what it costs at 100.
func firstLockTarget(lib string, s scaleSeries) targetRow {
	k := scaleFirstP50 + "|ms"
	small, okS := s.value(k, 100)
	big, okB := s.value(k, 100000)
	r := targetRow{target: fmt.Sprintf("%s: a fresh Client's first Lock+Unlock (p50) at 100,000 keys at most 2× its cost at 100", lib)}
	switch {
	case okS && okB && s.at[k][100000].AtLeast && big <= 2*small:
		r.measured, r.result = fmt.Sprintf("at least %s ms at 100,000 (cut short), %s ms at 100", num(big), num(small)), "not measured"
	case okS && okB:
		at := ""
		if s.at[k][100000].AtLeast {
			at = "at least "
		}
		r.measured = fmt.Sprintf("%s%s ms at 100,000, %s ms at 100: %s%s×", at, num(big), num(small), at, num(big/small))
		r.result = passFail(big <= 2*small)
	default:
		r.measured, r.result = notAt100000(s, k, small, okS)
	}
	return r
}

// notAt100000 is what firstLockTarget says of metric k not measured at
// 100,000 keys: why, if a figure says, and the growth from 100 (small,
// if okS) up to the largest size measured; a fail if that is already over
// the target.
func notAt100000(s scaleSeries, k string, small float64, okS bool) (measured, result string) {
	measured, result = "not measured at 100,000", "not measured"
	if f, ok := s.at[k][100000]; ok && f.Note != "" {
		measured += " (" + f.Note + ")"
	}
	var n int
	for m := range s.at[k] {
		if _, ok := s.value(k, m); ok {
			n = max(n, m)
		}
	}
	if !okS || n <= 100 {
		return measured, result
	}
	v, _ := s.value(k, n)
	at := ""
	if s.at[k][n].AtLeast {
		at = "at least "
	}
	measured += fmt.Sprintf("; at %s: %s%s ms, %s%s× its cost at 100", thousands(n), at, num(v), at, num(v/small))
	if v > 2*small {
		result = "fail (already at " + thousands(n) + ")"
	}
	return measured, result
}

// compactedDocsTarget: 100,000 keys locked once and compacted leave at
// most 100,000 documents in the lock collection.
func compactedDocsTarget(lib string, s scaleSeries) targetRow {
	r := targetRow{target: fmt.Sprintf("%s: at most 100,000 documents in the lock collection after 100,000 keys were each locked once and left idle past the idle age", lib)}
	if v, ok := s.value(scaleLockDocs+"|docs", 100000); ok {
		r.measured, r.result = fmt.Sprintf("%s documents", thousands(int(v))), passFail(v <= 100000)
		if note := s.at[scaleLockDocs+"|docs"][100000].Note; note != "" {
			r.measured += " (" + note + ")"
		}
	} else {
		r.measured, r.result = "not measured at 100,000", "not measured"
	}
	return r
}

// waitersTarget: what a waiter sends per second is flat from 1 to 64
// waiters.
func waitersTarget(s scaleSeries) targetRow {
	k := scalePerWaiter + "|cmds/s"
	one, ok1 := s.value(k, 1)
	many, okM := s.value(k, 64)
	r := targetRow{target: fmt.Sprintf("%s: commands/s per waiting process flat from 1 to 64 waiters (at 64 at most %.2f× at 1)", s.lib, scaleFlat)}
	if ok1 && okM {
		r.measured = fmt.Sprintf("%s at 64, %s at 1: %s×", num(many), num(one), num(many/one))
		r.result = passFail(many <= scaleFlat*one)
	} else {
		r.measured, r.result = "not measured", "not measured"
	}
	return r
}

func passFail(ok bool) string {
	if ok {
		return "**pass**"
	}
	return "**fail**"
}
