package harness

import (
	"encoding/xml"
	"io"
	"slices"
	"strings"
	"testing"
)

func TestPacking(t *testing.T) {
	for _, c := range []struct {
		w, procs int
		want     []int
	}{
		{1, 16, []int{1, 1}},
		{16, 16, []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
		{64, 16, []int{1, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4}},
		{3, 2, []int{1, 2, 1}},
		{5, 0, []int{1, 1, 1, 1, 1, 1}},
	} {
		got := packing(c.w, c.procs)
		if !slices.Equal(got, c.want) {
			t.Errorf("packing(%d, %d) = %v, want %v", c.w, c.procs, got, c.want)
		}
		sum := 0
		for _, k := range got[1:] {
			sum += k
		}
		if sum != c.w {
			t.Errorf("packing(%d, %d) runs %d waiters", c.w, c.procs, sum)
		}
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{7: "7", 100: "100", 1000: "1,000", 100000: "100,000", 1234567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// scaleReport makes a report with the scale figures the targets read.
func scaleReport(lib string, first map[int]float64, perWaiter map[int]float64) *Report {
	r := &Report{Lib: lib}
	for n, v := range first {
		r.add(Scale, scaleKeysParam(n), scaleFirstP50, "ms", []float64{v}, "")
	}
	r.atLeast(Scale, scaleKeysParam(100000), scaleStatus+" of 100 keys", "ms", 30000, "timed out")
	for w, v := range perWaiter {
		r.add(Scale, scaleWaitersParam(w), scalePerWaiter, "cmds/s", []float64{v}, "")
	}
	return r
}

// TestScaleTargets: the targets of issue 25 pass or fail on the figures.
func TestScaleTargets(t *testing.T) {
	pass := scaleReport("dsync", map[int]float64{100: 4, 100000: 7.9}, map[int]float64{1: 0.4, 64: 0.46})
	fail := scaleReport("dsync", map[int]float64{100: 4, 100000: 36000}, map[int]float64{1: 0.4, 64: 1.2})
	partial := scaleReport("dsync", map[int]float64{100: 4, 10000: 9000}, nil)
	for _, c := range []struct {
		name string
		r    *Report
		want []string
	}{
		{"pass", pass, []string{"7.90 ms at 100,000, 4.00 ms at 100: 1.98× | **pass**", "0.460 at 64, 0.400 at 1: 1.15× | **pass**"}},
		{"fail", fail, []string{"| **fail** |", "1.20 at 64, 0.400 at 1: 3.00× | **fail**"}},
		{"partial", partial, []string{"not measured at 100,000 (opt-in: -scale-keys); at 10,000: 9000 ms, 2250× its cost at 100 | fail (already at 10,000)"}},
	} {
		md := Render([]*Report{c.r}, "test")
		for _, w := range c.want {
			if !strings.Contains(md, w) {
				t.Errorf("%s: the report lacks %q:\n%s", c.name, w, md[strings.Index(md, "## 9."):])
			}
		}
		if !strings.Contains(md, "≥ 30000") {
			t.Errorf("%s: a timed-out status page is not shown as a lower bound", c.name)
		}
	}
}

// TestScaleSVG: the plot is well-formed XML with a curve for each library
// and a lower-bound marker for a timed-out status page.
func TestScaleSVG(t *testing.T) {
	a := scaleReport("dsync", map[int]float64{100: 4, 1000: 40, 10000: 400}, map[int]float64{1: 0.4, 4: 0.42, 16: 0.5, 64: 0.9})
	b := scaleReport("dsync@f28f297", map[int]float64{100: 5}, map[int]float64{1: 0.4, 64: 2})
	svg, ok := RenderScaleSVG([]*Report{a, b})
	if !ok {
		t.Fatal("no plot")
	}
	d := xml.NewDecoder(strings.NewReader(svg))
	polylines, triangles := 0, 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			switch se.Name.Local {
			case "polyline":
				polylines++
			case "path":
				triangles++
			}
		}
	}
	// dsync: first Lock (3 points), status (1), per waiter (4); the other:
	// first Lock (1), status (1), per waiter (2).
	if polylines != 6 {
		t.Errorf("%d curves, want 6", polylines)
	}
	if triangles != 2 {
		t.Errorf("%d lower-bound markers, want 2", triangles)
	}
	if !strings.Contains(svg, "dsync@f28f297") {
		t.Error("the second library is not in the legend")
	}
	if _, ok := RenderScaleSVG([]*Report{{Lib: "x"}}); ok {
		t.Error("a plot without scale figures")
	}
}
