package harness

import (
	"fmt"
	"maps"
	"math"
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
// scale scenario (params ending in suffix: " idle keys", " waiter(s)"),
// those figures by size.
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

var (
	idleKeysSuffixes = []string{" idle keys", " idle key"}
	waitersSuffixes  = []string{" waiters", " waiter"}
)

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
func renderScale(p func(string, ...any), reports []*Report) {
	p("![Scale: curves of the tables below](%s)\n\n", ScaleSVG)
	p("The curves: [%s](%s) (log x; first Lock+Unlock and status page on a log y axis).\n\n", ScaleSVG, ScaleSVG)
	keys := scalePart(reports, idleKeysSuffixes...)
	waiters := scalePart(reports, waitersSuffixes...)
	if len(keys) > 0 {
		p("### Idle keys in the collection\n\n")
		scaleTable(p, keys, "idle keys", thousands)
	}
	if len(waiters) > 0 {
		p("### Waiting processes\n\n")
		scaleTable(p, waiters, "waiters", strconv.Itoa)
	}
	p("Measured outside run.sh, with the commands that print them (keys used minutes before; repeated runs with 64 waiters): [scale-notes.md](scale-notes.md).\n\n")
	scaleTargets(p, keys, waiters)
}

// scaleTable writes one part's figures: a row per library and metric, a
// column per size, and the growth from the smallest size to the largest.
func scaleTable(p func(string, ...any), series []scaleSeries, what string, label func(int) string) {
	var sizes []int
	for _, s := range series {
		for _, n := range s.sizes {
			if !slices.Contains(sizes, n) {
				sizes = append(sizes, n)
			}
		}
	}
	slices.Sort(sizes)
	p("| figure (%s →) |", what)
	for _, n := range sizes {
		p(" %s |", label(n))
	}
	p(" largest ÷ smallest |\n|---|%s---|\n", strings.Repeat("---|", len(sizes)))
	// A row per metric (in order of first appearance) and library, the
	// libraries of a metric side by side.
	var metrics []string
	for _, s := range series {
		for _, k := range s.metrics {
			if !slices.Contains(metrics, k) {
				metrics = append(metrics, k)
			}
		}
	}
	var notes []string
	seen := map[string]bool{}
	for _, k := range metrics {
		for _, s := range series {
			if s.at[k] == nil {
				continue
			}
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
					note := fmt.Sprintf("%s (%s): %s", s.lib, f.Param, f.Note)
					if !seen[note] {
						seen[note] = true
						notes = append(notes, note)
					}
				}
			}
			switch {
			case first == nil || last == first || *first.Value == 0 || first.AtLeast:
				p(" – |\n")
			case last.AtLeast:
				p(" ≥ %s |\n", num(*last.Value / *first.Value))
			default:
				p(" %s |\n", num(*last.Value / *first.Value))
			}
		}
	}
	if len(notes) > 0 {
		p("\n")
		for _, n := range notes {
			p("- %s\n", n)
		}
	}
	p("\n")
}

// scaleFlat is how much more a waiter may send at 64 waiters than at 1
// for "flat": the noise of one 40 s count of one waiter.
const scaleFlat = 1.25

// scaleTargets writes issue 25's targets, each with what dsync measured
// and whether it passes.
func scaleTargets(p func(string, ...any), keys, waiters []scaleSeries) {
	type row struct{ target, measured, result string }
	var rows []row
	for _, s := range keys {
		if !strings.HasPrefix(s.lib, "dsync") {
			continue
		}
		k := scaleFirstP50 + "|ms"
		small, okS := s.value(k, 100)
		big, okB := s.value(k, 100000)
		r := row{target: fmt.Sprintf("%s: a fresh Client's first Lock+Unlock (p50) at 100,000 idle keys at most 2× its cost at 100", s.lib)}
		switch {
		case okS && okB:
			r.measured = fmt.Sprintf("%s ms at 100,000, %s ms at 100: %s×", num(big), num(small), num(big/small))
			r.result = passFail(big <= 2*small)
		case okS && len(s.at[k]) > 1:
			n := slices.Max(slices.Collect(maps.Keys(s.at[k])))
			v, _ := s.value(k, n)
			r.measured = fmt.Sprintf("not measured at 100,000 (opt-in: -scale-keys); at %s: %s ms, %s× its cost at 100", thousands(n), num(v), num(v/small))
			r.result = "not measured"
			if v > 2*small {
				r.result = "fail (already at " + thousands(n) + ")"
			}
		default:
			r.measured, r.result = "not measured", "not measured"
		}
		rows = append(rows, r)
		for _, m := range s.metrics {
			if !strings.HasPrefix(m, scaleDocs+" in the lock collection|") {
				continue
			}
			r := row{target: fmt.Sprintf("%s: at most 100,000 documents in the lock collection after 100,000 keys were each locked once and left idle", s.lib)}
			if v, ok := s.value(m, 100000); ok {
				r.measured, r.result = fmt.Sprintf("%s documents", thousands(int(v))), passFail(v <= 100000)
			} else {
				r.measured, r.result = "not measured at 100,000", "not measured"
			}
			rows = append(rows, r)
		}
	}
	for _, s := range waiters {
		if !strings.HasPrefix(s.lib, "dsync") {
			continue
		}
		k := scalePerWaiter + "|cmds/s"
		one, ok1 := s.value(k, 1)
		many, okM := s.value(k, 64)
		r := row{target: fmt.Sprintf("%s: commands/s per waiting process flat from 1 to 64 waiters (at 64 at most %.2f× at 1)", s.lib, scaleFlat)}
		if ok1 && okM {
			r.measured = fmt.Sprintf("%s at 64, %s at 1: %s×", num(many), num(one), num(many/one))
			r.result = passFail(many <= scaleFlat*one)
		} else {
			r.measured, r.result = "not measured", "not measured"
		}
		rows = append(rows, r)
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

func passFail(ok bool) string {
	if ok {
		return "**pass**"
	}
	return "**fail**"
}

// logTicks returns the powers of ten from lo to hi.
func logTicks(lo, hi float64) []float64 {
	var t []float64
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		t = append(t, math.Pow(10, e))
	}
	return t
}
