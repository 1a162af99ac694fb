package harness

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// A panel of the scale scenario's plot: an SVG written by hand (no
// dependency), x on a log scale.

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
	xticks, fx := xAxis(xs, pl, pr)
	var yticks []float64
	var fy func(float64) float64
	if pn.logY {
		yticks, fy = logYAxis(ys, pt, pb)
	} else {
		yticks, fy = linearYAxis(ys, pt, pb)
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
	// Waiter counts (1, 4, 16, 64) sit between powers of ten: mark them.
	var xmarks []float64
	for _, x := range xs {
		if !containsFloat(xmarks, x) {
			xmarks = append(xmarks, x)
		}
	}
	for _, t := range xmarks {
		x := fx(t)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999"/>`+"\n", x, pb, x, pb+4)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, pb+15, axisNum(t))
	}
	drawAxisLabels(b, pn, x0, pl, pr, pt, pb)
	for i, l := range pn.lines {
		drawLine(b, l, fx, fy)
		// The legend, below the x label.
		cols := legendColumns(pn)
		lx, ly := pl+float64(i%cols)*(pr-pl)/float64(cols), pb+42+float64(i/cols)*12
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`+"\n", lx, ly-4, lx+18, ly-4, l.color, dashAttr(l))
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", lx+22, ly, html.EscapeString(l.name))
	}
}

// xAxis returns the ticks of an x axis (log) holding xs, the powers of
// ten around them, and where an x falls between pl and pr.
func xAxis(xs []float64, pl, pr float64) (ticks []float64, fx func(float64) float64) {
	xlo, xhi := minMax(xs)
	ticks = logTicks(xlo, xhi)
	xlo, xhi = math.Min(xlo, ticks[0]), math.Max(xhi, ticks[len(ticks)-1])
	if xlo == xhi {
		xlo, xhi = xlo/10, xhi*10
	}
	return ticks, func(x float64) float64 {
		return pl + (math.Log10(x)-math.Log10(xlo))/(math.Log10(xhi)-math.Log10(xlo))*(pr-pl)
	}
}

// logYAxis returns the ticks of a log y axis holding ys, powers of ten,
// and where a y falls between pb (the bottom) and pt.
func logYAxis(ys []float64, pt, pb float64) (ticks []float64, fy func(float64) float64) {
	ylo, yhi := minMax(ys)
	ticks = logTicks(ylo, yhi)
	ylo, yhi = ticks[0], ticks[len(ticks)-1]
	if ylo == yhi {
		ylo, yhi = ylo/10, yhi*10
		ticks = []float64{ylo, yhi / 10, yhi}
	}
	return ticks, func(y float64) float64 {
		return pb - (math.Log10(y)-math.Log10(ylo))/(math.Log10(yhi)-math.Log10(ylo))*(pb-pt)
	}
}

// linearYAxis returns the ticks of a linear y axis from 0 holding ys, at
// a round step, and where a y falls between pb (the bottom) and pt.
func linearYAxis(ys []float64, pt, pb float64) (ticks []float64, fy func(float64) float64) {
	_, yhi := minMax(ys)
	if yhi <= 0 {
		yhi = 1 // all zero: a flat line at the bottom
	}
	step := niceStep(yhi / 5)
	yhi = math.Ceil(yhi*1.05/step) * step
	for y := 0.0; y <= yhi+step/2; y += step {
		ticks = append(ticks, y)
	}
	return ticks, func(y float64) float64 { return pb - y/yhi*(pb-pt) }
}

// drawAxisLabels writes what the axes of pn show.
func drawAxisLabels(b *strings.Builder, pn plotPanel, x0, pl, pr, pt, pb float64) {
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s (log)</text>`+"\n", (pl+pr)/2, pb+29, html.EscapeString(pn.xlabel))
	ylabel := pn.ylabel
	if pn.logY {
		ylabel += " (log)"
	}
	fmt.Fprintf(b, `<text transform="translate(%.1f %.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", x0+14, (pt+pb)/2, html.EscapeString(ylabel))
}

// drawLine draws the curve l and its points: a dot with its value, or an
// open triangle for a lower bound.
func drawLine(b *strings.Builder, l plotLine, fx, fy func(float64) float64) {
	var path []string
	for _, p := range l.pts {
		path = append(path, fmt.Sprintf("%.1f,%.1f", fx(p.x), fy(p.y)))
	}
	fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.8"%s/>`+"\n", strings.Join(path, " "), l.color, dashAttr(l))
	for _, p := range l.pts {
		x, y := fx(p.x), fy(p.y)
		if p.atLeast {
			fmt.Fprintf(b, `<path d="M%.1f %.1f l5 9 h-10 z" fill="white" stroke="%s" stroke-width="1.5"><title>%s: at least %s</title></path>`+"\n",
				x, y-6, l.color, html.EscapeString(l.name), num(p.y))
			continue
		}
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s: %s at %s</title></circle>`+"\n", x, y, l.color, html.EscapeString(l.name), num(p.y), axisNum(p.x))
	}
}

// dashAttr is the stroke-dasharray attribute of l, if it is not solid.
func dashAttr(l plotLine) string {
	if l.dash == "" {
		return ""
	}
	return ` stroke-dasharray="` + l.dash + `"`
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

// logTicks returns the powers of ten from lo to hi.
func logTicks(lo, hi float64) []float64 {
	var t []float64
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		t = append(t, math.Pow(10, e))
	}
	return t
}
