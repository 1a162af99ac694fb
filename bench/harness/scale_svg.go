package harness

import (
	"fmt"
	"html"
	"maps"
	"math"
	"slices"
	"strings"
)

// The plot of the scale scenario: an SVG written by hand (no dependency),
// one panel per curve, x on a log scale.

// A plotPoint is one measured figure; atLeast marks a lower bound (a
// status page that timed out), drawn as an open triangle.
type plotPoint struct {
	x, y    float64
	atLeast bool
}

type plotLine struct {
	name  string // legend
	color string
	dash  string // stroke-dasharray; "" solid
	pts   []plotPoint
}

type plotPanel struct {
	title, xlabel, ylabel string
	logY                  bool
	lines                 []plotLine
}

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
	keys := map[string][]scaleSeries{}
	found := false
	for _, ks := range keySeriesList {
		keys[ks.name] = scalePart(reports, ks.suffixes...)
		found = found || len(keys[ks.name]) > 0
	}
	waiters := scalePart(reports, waitersSuffixes...)
	if !found && len(waiters) == 0 {
		return "", false
	}
	color := map[string]string{}
	for _, r := range reports {
		if _, ok := color[r.Lib]; !ok {
			color[r.Lib] = plotColors[len(color)%len(plotColors)]
		}
	}
	// lines returns the curves of the metrics metric picks; on a log axis
	// (positive) only the values above zero.
	lines := func(series []scaleSeries, metric func(string) bool, name func(lib string) string, dash string, positive bool) []plotLine {
		var out []plotLine
		for _, s := range series {
			for _, k := range s.metrics {
				if !metric(k) {
					continue
				}
				l := plotLine{name: name(s.lib), color: color[s.lib], dash: dash}
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
	is := func(m string) func(string) bool { return func(k string) bool { return k == m } }
	prefix := func(m string) func(string) bool { return func(k string) bool { return strings.HasPrefix(k, m) } }
	// A library with more than one series of idle keys (dsync) names the
	// series in the legend; one with a single series (a peer) does not.
	seriesOf := map[string]int{}
	for _, ks := range keySeriesList {
		for _, s := range keys[ks.name] {
			if slices.ContainsFunc(slices.Collect(maps.Values(s.at)), func(at map[int]Figure) bool {
				return slices.ContainsFunc(slices.Collect(maps.Values(at)), func(f Figure) bool { return f.Value != nil })
			}) {
				seriesOf[s.lib]++
			}
		}
	}
	// keyLines draws metric in each series of idle keys.
	keyLines := func(metric func(string) bool, suffix string) []plotLine {
		var out []plotLine
		for _, ks := range keySeriesList {
			name := func(lib string) string {
				if seriesOf[lib] > 1 || ks.name != keysKept {
					return lib + ", " + ks.name + suffix
				}
				return lib + suffix
			}
			out = append(out, lines(keys[ks.name], metric, name, keySeriesDash[ks.name], true)...)
		}
		return out
	}
	plain := func(suffix string) func(string) string { return func(lib string) string { return lib + suffix } }
	panels := []plotPanel{
		{title: "A fresh Client's first Lock+Unlock, p50", xlabel: "idle keys", ylabel: "ms", logY: true,
			lines: keyLines(is(scaleFirstP50+"|ms"), "")},
		{title: "A status page (△: timed out, at least)", xlabel: "idle keys", ylabel: "ms", logY: true,
			lines: keyLines(prefix(scaleStatus+" of "), "")},
		{title: "Commands per second per waiter, while waiting", xlabel: "waiting processes", ylabel: "commands/s",
			lines: lines(waiters, is(scalePerWaiter+"|cmds/s"), plain(""), dashSolid, false)},
		{title: "Server CPU while they wait", xlabel: "waiting processes", ylabel: "% of a core",
			lines: lines(waiters, is(scaleServerCPU+"|% of a core"), plain(""), dashSolid, false)},
		{title: "Handoff Unlock→Lock", xlabel: "waiting processes", ylabel: "ms (p50 solid, p99 dashed)", logY: true,
			lines: append(lines(waiters, is(scaleHandoffP50+"|ms"), plain(" p50"), dashSolid, true), lines(waiters, is(scaleHandoffP99+"|ms"), plain(" p99"), dashDashed, true)...)},
		{title: "Documents in the lock collection", xlabel: "idle keys, each locked once", ylabel: "documents", logY: true,
			lines: keyLines(is(scaleLockDocs+"|docs"), "")},
	}
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
	return b.String(), true
}

// legendColumns is how many entries of pn's legend share a line: three
// when the names are short, two otherwise.
func legendColumns(pn plotPanel) int {
	for _, l := range pn.lines {
		if len([]rune(l.name)) > 20 {
			return 2
		}
	}
	return 3
}

// legendRows is how many lines pn's legend takes.
func legendRows(pn plotPanel) int {
	cols := legendColumns(pn)
	return (len(pn.lines) + cols - 1) / cols
}

// plotBottom is where a panel's plot ends, below the panel's top: the x
// axis's labels and the legend follow.
const plotBottom = 250

// drawPanel draws one panel of width w, its top left corner at (x0, y0).
func drawPanel(b *strings.Builder, pn plotPanel, x0, y0 float64, w int) {
	const left, right, top = 64, 16, 28
	pl, pr := x0+left, x0+float64(w-right)
	pt, pb := y0+top, y0+plotBottom
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="12" font-weight="bold" text-anchor="middle">%s</text>`+"\n", (pl+pr)/2, y0+16, html.EscapeString(pn.title))
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#999"/>`+"\n", pl, pt, pr-pl, pb-pt)
	var xs, ys []float64
	for _, l := range pn.lines {
		for _, p := range l.pts {
			xs, ys = append(xs, p.x), append(ys, p.y)
		}
	}
	if len(xs) == 0 {
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#666">not measured</text>`+"\n", (pl+pr)/2, (pt+pb)/2)
		return
	}
	xlo, xhi := minMax(xs)
	xticks := logTicks(xlo, xhi)
	xlo, xhi = math.Min(xlo, xticks[0]), math.Max(xhi, xticks[len(xticks)-1])
	if xlo == xhi {
		xlo, xhi = xlo/10, xhi*10
	}
	// Waiter counts (1, 4, 16, 64) sit between powers of ten: mark them.
	var xmarks []float64
	for _, x := range xs {
		if !containsFloat(xmarks, x) {
			xmarks = append(xmarks, x)
		}
	}
	fx := func(x float64) float64 {
		return pl + (math.Log10(x)-math.Log10(xlo))/(math.Log10(xhi)-math.Log10(xlo))*(pr-pl)
	}
	ylo, yhi := minMax(ys)
	var yticks []float64
	var fy func(float64) float64
	if pn.logY {
		yticks = logTicks(ylo, yhi)
		ylo, yhi = yticks[0], yticks[len(yticks)-1]
		if ylo == yhi {
			ylo, yhi = ylo/10, yhi*10
			yticks = []float64{ylo, yhi / 10, yhi}
		}
		fy = func(y float64) float64 {
			return pb - (math.Log10(y)-math.Log10(ylo))/(math.Log10(yhi)-math.Log10(ylo))*(pb-pt)
		}
	} else {
		if yhi <= 0 {
			yhi = 1 // all zero: a flat line at the bottom
		}
		step := niceStep(yhi / 5)
		ylo, yhi = 0, math.Ceil(yhi*1.05/step)*step
		for y := 0.0; y <= yhi+step/2; y += step {
			yticks = append(yticks, y)
		}
		fy = func(y float64) float64 { return pb - y/yhi*(pb-pt) }
	}
	for _, t := range yticks {
		y := fy(t)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e5e5e5"/>`+"\n", pl, y, pr, y)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", pl-4, y+4, axisNum(t))
	}
	for _, t := range xticks {
		x := fx(t)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e5e5e5"/>`+"\n", x, pt, x, pb)
	}
	for _, t := range xmarks {
		x := fx(t)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999"/>`+"\n", x, pb, x, pb+4)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, pb+15, axisNum(t))
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s (log)</text>`+"\n", (pl+pr)/2, pb+29, html.EscapeString(pn.xlabel))
	ylabel := pn.ylabel
	if pn.logY {
		ylabel += " (log)"
	}
	fmt.Fprintf(b, `<text transform="translate(%.1f %.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", x0+14, (pt+pb)/2, html.EscapeString(ylabel))
	for i, l := range pn.lines {
		var path []string
		for _, p := range l.pts {
			path = append(path, fmt.Sprintf("%.1f,%.1f", fx(p.x), fy(p.y)))
		}
		dash := ""
		if l.dash != "" {
			dash = ` stroke-dasharray="` + l.dash + `"`
		}
		fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.8"%s/>`+"\n", strings.Join(path, " "), l.color, dash)
		for _, p := range l.pts {
			x, y := fx(p.x), fy(p.y)
			if p.atLeast {
				fmt.Fprintf(b, `<path d="M%.1f %.1f l5 9 h-10 z" fill="white" stroke="%s" stroke-width="1.5"><title>%s: at least %s</title></path>`+"\n",
					x, y-6, l.color, html.EscapeString(l.name), num(p.y))
				continue
			}
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s: %s at %s</title></circle>`+"\n", x, y, l.color, html.EscapeString(l.name), num(p.y), axisNum(p.x))
		}
		// The legend, below the x label.
		cols := legendColumns(pn)
		lx, ly := pl+float64(i%cols)*(pr-pl)/float64(cols), pb+42+float64(i/cols)*12
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`+"\n", lx, ly-4, lx+18, ly-4, l.color, dash)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", lx+22, ly, html.EscapeString(l.name))
	}
}

func minMax(xs []float64) (lo, hi float64) {
	lo, hi = xs[0], xs[0]
	for _, x := range xs {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return lo, hi
}

func containsFloat(xs []float64, x float64) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// niceStep rounds d up to 1, 2 or 5 times a power of ten.
func niceStep(d float64) float64 {
	if d <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(d)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= d {
			return m * p
		}
	}
	return 10 * p
}

// axisNum labels an axis: 100,000; 1.5; 0.25.
func axisNum(v float64) string {
	if v >= 1 && v == math.Trunc(v) {
		return thousands(int(v))
	}
	return num(v)
}
