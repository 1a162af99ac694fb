package harness

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// resultsInRunOrder is bench/results/*.json in the order bench/run.sh
// hands them to "dsyncbench report": the eight libraries it measures
// first, then every other file (a run kept under another name) in name
// order.
func resultsInRunOrder(t *testing.T) []*Report {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "results", "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no results in ../results: %v", err)
	}
	measured := []string{"dsync", "dsync-polling", "dsync-hints", "dsync-polling-hints", "dsync-linger", "mongo-lock", "redsync", "etcd"}
	name := func(p string) string { return strings.TrimSuffix(filepath.Base(p), ".json") }
	var ordered []string
	for _, lib := range measured {
		for _, p := range paths {
			if name(p) == lib {
				ordered = append(ordered, p)
			}
		}
	}
	for _, p := range paths {
		if !slices.Contains(measured, name(p)) {
			ordered = append(ordered, p)
		}
	}
	var reports []*Report
	for _, p := range ordered {
		r, err := ReadReport(p)
		if err != nil {
			t.Fatal(err)
		}
		reports = append(reports, r)
	}
	return reports
}

// TestRenderReproducesResults is the golden test of the rendering:
// bench/RESULTS.md and bench/scale.svg are what Render and RenderScaleSVG
// make of the figures kept in bench/results, byte for byte, as run.sh
// wrote them. A change to the rendering that is meant shows here; then
// write both again without measuring anything:
//
//	go build -o /tmp/dsyncbench ./bench/cmd/dsyncbench
//	/tmp/dsyncbench report -o bench/RESULTS.md -command "bash bench/run.sh" bench/results/dsync.json ... (run.sh's order)
func TestRenderReproducesResults(t *testing.T) {
	for _, c := range []struct {
		file   string
		render func([]*Report) string
	}{
		{"RESULTS.md", func(rs []*Report) string { return Render(rs, "bash bench/run.sh") }},
		{ScaleSVG, func(rs []*Report) string {
			svg, ok := RenderScaleSVG(rs)
			if !ok {
				t.Error("RenderScaleSVG found no scale figures")
			}
			return svg
		}},
	} {
		want, err := os.ReadFile(filepath.Join("..", c.file))
		if err != nil {
			t.Fatal(err)
		}
		got := c.render(resultsInRunOrder(t))
		if got == string(want) {
			continue
		}
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Errorf("%s line %d:\n got %q\nwant %q", c.file, i+1, gl[i], wl[i])
				break
			}
		}
		t.Errorf("%s: rendered %d lines, the file has %d, and they differ", c.file, len(gl), len(wl))
	}
}
