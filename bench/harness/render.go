package harness

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Render writes the reports as a Markdown document: dsync first, then its
// peers, with the ratio dsync ÷ peer of every figure.
func Render(reports []*Report, command string) string {
	dsyncFirst(reports)
	o := firstSizes(reports)
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	renderPreamble(p, command, o.Runs)
	renderMachine(p, reports)
	renderLibraries(p, reports)
	for i, sc := range AllScenarios {
		renderScenario(p, reports, i+1, sc, o)
	}
	renderLibraryNotes(p, reports)
	return b.String()
}

// printf writes to the document being rendered.
type printf = func(format string, a ...any)

// dsyncFirst moves dsync's report to the front, the others in their order.
func dsyncFirst(reports []*Report) {
	slices.SortStableFunc(reports, func(a, b *Report) int {
		if a.Lib == "dsync" {
			return -1
		}
		if b.Lib == "dsync" {
			return 1
		}
		return 0
	})
}

// firstSizes returns the sizes of the first report that has them, for the
// text of the whole document.
func firstSizes(reports []*Report) Options {
	for _, r := range reports {
		if r.Options.Runs != 0 {
			return r.Options
		}
	}
	return Options{}
}

// renderPreamble writes the title and how to read the tables.
func renderPreamble(p printf, command string, runs int) {
	p("# Benchmark results\n\n")
	p("Written by `%s`; do not edit, run it again. Every figure is measured, on one machine in one run of the command, ", command)
	p("against servers on loopback. A figure is the median of %d repeated runs unless its row says otherwise ", runs)
	p("(the JSON files next to this one have every run); p50 and p99 are taken within each run, then the median of the runs is shown. ")
	p("`dsync ÷ X` is dsync's figure divided by library X's: below 1, dsync has less of it (time, commands, bytes, holds/s). ")
	p("— marks a library without the primitive a scenario measures (the note under the table says what it has instead); ")
	p("– a figure not measured for that library.\n\n")
	p("Each library runs on the server it is made for, so latencies include the server: dsync and mongo-lock share one server ")
	p("(see the table below), redsync has Redis and etcd has etcd. Nothing else is tuned: every server runs with its defaults ")
	p("and its data in a temporary directory.\n\n")
}

// renderMachine writes the machine of the first report, and the load
// when each library's run began.
func renderMachine(p printf, reports []*Report) {
	if len(reports) == 0 {
		return
	}
	m := reports[0].Machine
	p("## Machine\n\n")
	p("- CPU: %s, %d cores\n- %s, kernel %s\n- Go %s\n", m.CPU, m.Cores, m.OS, m.Kernel, m.Go)
	p("- load average when each library's run began:")
	for i, r := range reports {
		if i > 0 {
			p(";")
		}
		p(" %s %s", r.Lib, r.Machine.Load)
	}
	p("\n\n")
}

// renderLibraries writes the table of what was measured, on which server.
func renderLibraries(p printf, reports []*Report) {
	p("## Libraries and servers\n\n| name | library | server | measured | took |\n|---|---|---|---|---|\n")
	for _, r := range reports {
		p("| %s | %s | %s | %s | %v |\n", r.Lib, r.Library, r.Server, r.Started.Format(time.RFC3339), time.Duration(r.Took).Round(time.Second))
	}
	p("\n")
}

// renderScenario writes section n, of scenario sc: what it measures and a
// table of its figures, a column per library that measured it or lacks
// its primitive, dsync's first. A scenario no library ran has no section.
func renderScenario(p printf, reports []*Report, n int, sc string, o Options) {
	libs, lacks := scenarioLibs(reports, sc)
	if sc == Scale && len(libs) > 0 {
		so := o // the sizes of a report that ran the scenario
		for _, r := range reports {
			if r.Lib == libs[0] {
				so = r.Options
			}
		}
		title, text := scenarioText(sc, so)
		p("## %d. %s\n\n%s\n\n", n, title, text)
		renderScale(p, reports)
		return
	}
	keys, figs := scenarioFigures(reports, sc)
	if len(keys) == 0 {
		return
	}
	title, text := scenarioText(sc, measuredSizes(reports, sc, libs, o))
	p("## %d. %s\n\n%s\n\n", n, title, text)
	p("| figure |")
	for _, l := range libs {
		p(" %s |", l)
	}
	for _, l := range libs[1:] {
		p(" dsync ÷ %s |", l)
	}
	p("\n|---|%s\n", strings.Repeat("---|", 2*len(libs)-1))
	notes := tableNotes{seen: map[string]bool{}}
	for _, k := range keys {
		renderRow(p, figs[k], libs, lacks, &notes)
	}

	for _, l := range libs {
		if why, ok := lacks[l]; ok {
			notes.list = append(notes.list, fmt.Sprintf("%s: %s", l, why))
		}
	}
	if loads := scenarioLoads(reports, sc, libs); loads != "" {
		notes.list = append(notes.list, "load average when the scenario began: "+loads)
	}
	notes.render(p)
	switch sc {
	case PartitionScenario:
		renderPartition(p, reports)
	case FloorScenario:
		renderFloorShares(p, reports)
	case LockSetScenario:
		renderLockSet(p, reports)
	}
}

// scenarioLoads lists the load average when scenario sc began, for each
// of libs whose report recorded it ("" if none did).
func scenarioLoads(reports []*Report, sc string, libs []string) string {
	var out []string
	for _, r := range reports {
		if l, ok := r.Loads[sc]; ok && slices.Contains(libs, r.Lib) {
			out = append(out, r.Lib+" "+l)
		}
	}
	return strings.Join(out, "; ")
}

// scenarioLibs returns the libraries with figures of scenario sc, or
// lacking its primitive (lacks: library → why), in the reports' order.
func scenarioLibs(reports []*Report, sc string) (libs []string, lacks map[string]string) {
	lacks = map[string]string{}
	for _, r := range reports {
		if why, ok := r.Lacking(sc); ok {
			lacks[r.Lib] = why
			libs = append(libs, r.Lib)
		} else if slices.ContainsFunc(r.Figures, func(f Figure) bool { return f.Scenario == sc }) {
			libs = append(libs, r.Lib)
		}
	}
	return libs, lacks
}

// scenarioFigures returns the rows of scenario sc's table (figure keys,
// in order of first appearance, dsync's first) and each row's figure of
// each library (figs: key → library → figure).
func scenarioFigures(reports []*Report, sc string) (keys []string, figs map[string]map[string]Figure) {
	figs = map[string]map[string]Figure{}
	for _, r := range reports {
		for _, f := range r.Figures {
			if f.Scenario != sc {
				continue
			}
			k := f.Key()
			if figs[k] == nil {
				figs[k] = map[string]Figure{}
				keys = append(keys, k)
			}
			figs[k][r.Lib] = f
		}
	}
	return keys, figs
}

// measuredSizes returns the sizes of the first report that measured
// scenario sc (one of libs, not lacking it), else o.
func measuredSizes(reports []*Report, sc string, libs []string, o Options) Options {
	for _, r := range reports {
		if _, lacking := r.Lacking(sc); !lacking && slices.Contains(libs, r.Lib) && r.Options.Runs != 0 {
			return r.Options
		}
	}
	return o
}

// renderRow writes the row of one figure: its label, each library's
// value, and the ratios dsync ÷ peer. The figures' notes go to notes.
func renderRow(p printf, byLib map[string]Figure, libs []string, lacks map[string]string, notes *tableNotes) {
	p("| %s |", rowLabel(byLib))
	for _, l := range libs {
		f, ok := byLib[l]
		if _, lacking := lacks[l]; lacking {
			p(" — |")
		} else {
			p(" %s |", cell(f, ok))
		}
		if ok && f.Note != "" {
			n := l
			if f.Param != "" {
				n += " (" + f.Param + ")"
			}
			notes.once(n + ": " + f.Note)
		}
	}
	for _, l := range libs[1:] {
		p(" %s |", ratio(byLib["dsync"], byLib[l]))
	}
	p("\n")
}

// rowLabel names a row by its figures' param, metric and unit (the same
// in every library's figure of the row: they make its key).
func rowLabel(byLib map[string]Figure) string {
	var f Figure
	for _, f = range byLib {
		break
	}
	label := f.Metric
	if f.Param != "" {
		label = f.Param + ": " + label
	}
	if f.Unit != "" {
		label += " (" + f.Unit + ")"
	}
	return label
}

// ratio is dsync's figure divided by a peer's, or "–" where either is
// missing, a lower bound, or the peer's is zero.
func ratio(ours, theirs Figure) string {
	if ours.Value == nil || theirs.Value == nil || *theirs.Value == 0 || ours.AtLeast || theirs.AtLeast {
		return "–"
	}
	return num(*ours.Value / *theirs.Value)
}

// tableNotes are the notes under a table, in order, each figure's once.
type tableNotes struct {
	list []string
	seen map[string]bool
}

// once adds note unless it is there already.
func (n *tableNotes) once(note string) {
	if !n.seen[note] {
		n.seen[note] = true
		n.list = append(n.list, note)
	}
}

// render writes the notes as a list after a table, and ends the table's
// section.
func (n *tableNotes) render(p printf) {
	if len(n.list) > 0 {
		p("\n")
		for _, note := range n.list {
			p("- %s\n", note)
		}
	}
	p("\n")
}

// renderLibraryNotes writes what went wrong in each library's run.
func renderLibraryNotes(p printf, reports []*Report) {
	heading := false
	for _, r := range reports {
		if len(r.Notes) > 0 {
			if !heading {
				p("## Notes by library\n\n")
				heading = true
			}
			for _, n := range r.Notes {
				p("- **%s**: %s\n", r.Lib, n)
			}
		}
	}
}

// cell is a figure as a table shows it: "–" when it was not measured,
// "—" when it does not apply to the library (Lacking), "n/a" when it
// could not be measured, "≥ v" for a lower bound.
func cell(f Figure, ok bool) string {
	switch {
	case !ok:
		return "–"
	case f.Lacking:
		return "—"
	case f.Value == nil:
		return "n/a"
	case f.AtLeast:
		return "≥ " + num(*f.Value)
	}
	return num(*f.Value)
}

// num formats v with about three significant digits.
func num(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	case a >= 0.01:
		return fmt.Sprintf("%.3f", v)
	default:
		return fmt.Sprintf("%.2g", v)
	}
}
