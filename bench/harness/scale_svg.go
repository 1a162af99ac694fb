package harness

import (
	"fmt"
	"strings"
)

// The plot of the scale scenario: an SVG written by hand (no dependency),
// one panel per curve (plot_panel.go draws them), x on a log scale.

// plotColors are given to the libraries in the order of the reports.
var plotColors = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"}

// Dash patterns: the series of idle keys, and p99 beside p50.
const (
	dashSolid  = ""
	dashDashed = "5 3"
	dashDotted = "2 2"
)

// keySeriesDash is how each series of idle keys is drawn.
var keySeriesDash = map[string]string{keysKept: dashSolid, keysCompacted: dashDashed, keysOld: dashDotted}

// RenderScaleSVG draws the scale scenario's curves of the reports; ok is
// false if none has scale figures.
func RenderScaleSVG(reports []*Report) (svg string, ok bool) {
	pl, ok := newScalePlot(reports)
	if !ok {
		return "", false
	}
	return drawScalePlot(pl.panels()), true
}

// A scalePlot is what the panels of the scale plot draw: the reports'
// scale figures, and each library's color.
type scalePlot struct {
	keys    map[string][]scaleSeries // series of idle keys (keysKept...) → each library's figures
	waiters []scaleSeries
	color   map[string]string // library → its color
	// seriesOf counts the series of idle keys each library measured: a
	// library with more than one (dsync) names the series in the legend;
	// one with a single series (a peer) does not.
	seriesOf map[string]int
}

// newScalePlot gathers the scale figures of the reports; ok is false if
// there are none.
func newScalePlot(reports []*Report) (pl *scalePlot, ok bool) {
	pl = &scalePlot{keys: map[string][]scaleSeries{}, color: map[string]string{}, seriesOf: map[string]int{}}
	found := false
	for _, ks := range keySeriesList {
		pl.keys[ks.name] = scalePart(reports, ks.suffixes...)
		found = found || len(pl.keys[ks.name]) > 0
	}
	pl.waiters = scalePart(reports, waitersSuffixes...)
	if !found && len(pl.waiters) == 0 {
		return nil, false
	}
	for _, r := range reports {
		if _, ok := pl.color[r.Lib]; !ok {
			pl.color[r.Lib] = plotColors[len(pl.color)%len(plotColors)]
		}
	}
	for _, ks := range keySeriesList {
		for _, s := range pl.keys[ks.name] {
			if s.measured() {
				pl.seriesOf[s.lib]++
			}
		}
	}
	return pl, true
}

// measured reports whether s has a value at some size.
func (s scaleSeries) measured() bool {
	for _, at := range s.at {
		for _, f := range at {
			if f.Value != nil {
				return true
			}
		}
	}
	return false
}

// panels are the plot's panels, in order: two per line.
func (pl *scalePlot) panels() []plotPanel {
	return []plotPanel{
		{title: "A fresh Client's first Lock+Unlock, p50", xlabel: "idle keys", ylabel: "ms", logY: true,
			lines: pl.keyLines(metricIs(scaleFirstP50+"|ms"), "")},
		{title: "A status page (△: timed out, at least)", xlabel: "idle keys", ylabel: "ms", logY: true,
			lines: pl.keyLines(metricPrefix(scaleStatus+" of "), "")},
		{title: "Commands per second per waiter, while waiting", xlabel: "waiting processes", ylabel: "commands/s",
			lines: pl.lines(pl.waiters, metricIs(scalePerWaiter+"|cmds/s"), libSuffix(""), dashSolid, false)},
		{title: "Server CPU while they wait", xlabel: "waiting processes", ylabel: "% of a core",
			lines: pl.lines(pl.waiters, metricIs(scaleServerCPU+"|% of a core"), libSuffix(""), dashSolid, false)},
		{title: "Handoff Unlock→Lock", xlabel: "waiting processes", ylabel: "ms (p50 solid, p99 dashed)", logY: true,
			lines: append(pl.lines(pl.waiters, metricIs(scaleHandoffP50+"|ms"), libSuffix(" p50"), dashSolid, true),
				pl.lines(pl.waiters, metricIs(scaleHandoffP99+"|ms"), libSuffix(" p99"), dashDashed, true)...)},
		{title: "Documents in the lock collection", xlabel: "idle keys, each locked once", ylabel: "documents", logY: true,
			lines: pl.keyLines(metricIs(scaleLockDocs+"|docs"), "")},
	}
}

// metricIs picks the metric m ("metric|unit"); metricPrefix those that
// start with m.
func metricIs(m string) func(string) bool { return func(k string) bool { return k == m } }
func metricPrefix(m string) func(string) bool {
	return func(k string) bool { return strings.HasPrefix(k, m) }
}

// libSuffix names a curve by its library and suffix.
func libSuffix(suffix string) func(string) string {
	return func(lib string) string { return lib + suffix }
}

// lines returns the curves of the metrics metric picks, one per library
// and metric, each named by name(library); on a log axis (positive) only
// the values above zero.
func (pl *scalePlot) lines(series []scaleSeries, metric func(string) bool, name func(lib string) string, dash string, positive bool) []plotLine {
	var out []plotLine
	for _, s := range series {
		for _, k := range s.metrics {
			if !metric(k) {
				continue
			}
			l := plotLine{name: name(s.lib), color: pl.color[s.lib], dash: dash}
			for _, n := range s.sizes {
				if f, ok := s.at[k][n]; ok && f.Value != nil && (*f.Value > 0 || !positive) {
					l.pts = append(l.pts, plotPoint{float64(n), *f.Value, f.AtLeast})
				}
			}
			if len(l.pts) > 0 {
				out = append(out, l)
			}
		}
	}
	return out
}

// keyLines draws metric in each series of idle keys.
func (pl *scalePlot) keyLines(metric func(string) bool, suffix string) []plotLine {
	var out []plotLine
	for _, ks := range keySeriesList {
		name := func(lib string) string {
			if pl.seriesOf[lib] > 1 || ks.name != keysKept {
				return lib + ", " + ks.name + suffix
			}
			return lib + suffix
		}
		out = append(out, pl.lines(pl.keys[ks.name], metric, name, keySeriesDash[ks.name], true)...)
	}
	return out
}

// drawScalePlot writes the SVG of the panels, two per line.
func drawScalePlot(panels []plotPanel) string {
	// Every panel leaves room below its plot for the longest legend.
	legend := 0
	for _, pn := range panels {
		legend = max(legend, legendRows(pn))
	}
	const pw, cols = 540, 2
	ph := plotBottom + 44 + 12*legend
	rows := (len(panels) + cols - 1) / cols
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n",
		cols*pw, rows*ph+48, cols*pw, rows*ph+48)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14" text-anchor="middle">bench/RESULTS.md, Scale: the curves of its tables</text>`+"\n", cols*pw/2)
	fmt.Fprintf(&b, `<text x="%d" y="38" fill="#444" text-anchor="middle">idle keys: solid, keys in the collection (used within the idle age); dashed, keys compacted; dotted, an older report's one series</text>`+"\n", cols*pw/2)
	for i, pn := range panels {
		drawPanel(&b, pn, float64(i%cols*pw), float64(48+i/cols*ph), pw)
	}
	b.WriteString("</svg>\n")
	return b.String()
}
