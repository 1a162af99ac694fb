package harness

import (
	"encoding/json"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// A Report holds every figure of one library from one run of a command.
type Report struct {
	Lib     string    `json:"lib"`
	Library string    `json:"library"` // module and version
	Server  string    `json:"server"`  // server and version
	Started time.Time `json:"started"`
	Took    Duration  `json:"took"`
	Machine Machine   `json:"machine"`
	Options Options   `json:"options"` // the sizes the figures were measured with
	Figures []Figure  `json:"figures"`
	// Lacks are the scenarios the library has no primitive for: a column
	// of "—" in RESULTS.md, with the reason under the table.
	Lacks []Lack   `json:"lacks,omitempty"`
	Notes []string `json:"notes,omitempty"`
	// Loads is /proc/loadavg when each scenario began (scenario → its
	// three figures): a run of some scenarios keeps the others' figures,
	// measured at other times, beside its own.
	Loads map[string]string `json:"loads,omitempty"`
}

// markLoad records the load average as scenario begins.
func (r *Report) markLoad(scenario string) {
	if l := loadAverage(); l != "" {
		if r.Loads == nil {
			r.Loads = map[string]string{}
		}
		r.Loads[scenario] = l
	}
}

// A Lack is a scenario a library has no primitive for, and why.
type Lack struct {
	Scenario string `json:"scenario"`
	Why      string `json:"why"`
}

// Lacking returns why r's library lacks scenario's primitive, and whether
// it does.
func (r *Report) Lacking(scenario string) (string, bool) {
	for _, l := range r.Lacks {
		if l.Scenario == scenario {
			return l.Why, true
		}
	}
	return "", false
}

// A Figure is one measured quantity: its value in each repeated run and
// the median of those.
type Figure struct {
	Scenario string    `json:"scenario"`
	Param    string    `json:"param,omitempty"`
	Metric   string    `json:"metric"`
	Unit     string    `json:"unit"`
	Runs     []float64 `json:"runs,omitempty"`
	Value    *float64  `json:"value"` // median of Runs; nil when not measured
	// AtLeast: Value is a lower bound (the measurement was cut short at
	// it, as a status page that timed out).
	AtLeast bool `json:"atLeast,omitempty"`
	// Lacking: the figure does not apply to the library (it has no such
	// thing: a status page, compaction); Note says why. Shown as "—".
	Lacking bool   `json:"lacking,omitempty"`
	Note    string `json:"note,omitempty"`
}

// Key identifies a figure across libraries and runs.
func (f Figure) Key() string { return f.Scenario + "|" + f.Param + "|" + f.Metric + "|" + f.Unit }

// Machine describes where the figures were measured.
type Machine struct {
	CPU    string `json:"cpu"`
	Cores  int    `json:"cores"`
	Go     string `json:"go"`
	OS     string `json:"os"`
	Kernel string `json:"kernel,omitempty"`
	Load   string `json:"load,omitempty"` // /proc/loadavg when the run started
}

// ThisMachine describes the current machine.
func ThisMachine() Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	m.Load = loadAverage()
	return m
}

// loadAverage is the first three figures of /proc/loadavg, or "".
func loadAverage() string {
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			return strings.Join(f[:3], " ")
		}
	}
	return ""
}

// Duration marshals as a string such as "1m30s".
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).Round(time.Millisecond).String())
}

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = Duration(v)
	return err
}

// add appends a figure whose value is the median of runs (NaNs, runs that
// measured nothing, are left out).
func (r *Report) add(scenario, param, metric, unit string, runs []float64, note string) {
	var ok []float64
	for _, v := range runs {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			ok = append(ok, v)
		}
	}
	f := Figure{Scenario: scenario, Param: param, Metric: metric, Unit: unit, Runs: ok, Note: note}
	if len(ok) > 0 {
		v := Median(ok)
		f.Value = &v
	}
	r.Figures = append(r.Figures, f)
}

// atLeast appends a figure known only to be at least v (cut short there).
func (r *Report) atLeast(scenario, param, metric, unit string, v float64, note string) {
	r.Figures = append(r.Figures, Figure{Scenario: scenario, Param: param, Metric: metric, Unit: unit, Runs: []float64{v}, Value: &v, AtLeast: true, Note: note})
}

// na records that a figure could not be measured, and why.
func (r *Report) na(scenario, param, metric, unit, why string) {
	r.Figures = append(r.Figures, Figure{Scenario: scenario, Param: param, Metric: metric, Unit: unit, Note: why})
}

// lackFigure records that a figure does not apply to the library, and
// why.
func (r *Report) lackFigure(scenario, param, metric, unit, why string) {
	r.Figures = append(r.Figures, Figure{Scenario: scenario, Param: param, Metric: metric, Unit: unit, Lacking: true, Note: why})
}

// lack records that the library has no primitive for scenario.
func (r *Report) lack(scenario, why string) {
	r.Lacks = append(r.Lacks, Lack{Scenario: scenario, Why: why})
}

// Merge replaces r's figures with those of newer that have the same key,
// and adds the others: re-running some scenarios keeps the rest. A
// scenario newer measured is no longer lacking, and loses r's notes of it;
// one newer lacks loses the figures r had of it.
func (r *Report) Merge(newer *Report) {
	measured := map[string]bool{}
	for _, f := range newer.Figures {
		measured[f.Scenario] = true
	}
	lacks := r.Lacks[:0:0]
	for _, l := range r.Lacks {
		if _, now := newer.Lacking(l.Scenario); !now && !measured[l.Scenario] {
			lacks = append(lacks, l)
		}
	}
	r.Lacks = append(lacks, newer.Lacks...)
	// A part of the scale scenario measured again (its idle keys, its
	// waiters) loses the figures newer does not have: sizes or series no
	// longer measured, the one series of idle keys of older reports.
	parts, keys := map[string]bool{}, map[string]bool{}
	for _, f := range newer.Figures {
		keys[f.Key()] = true
		if p := scalePartOf(f); p != "" {
			parts[p] = true
		}
	}
	r.Figures = slices.DeleteFunc(r.Figures, func(f Figure) bool {
		_, now := newer.Lacking(f.Scenario)
		return now || (parts[scalePartOf(f)] && !keys[f.Key()])
	})
	idx := map[string]int{}
	for i, f := range r.Figures {
		idx[f.Key()] = i
	}
	for _, f := range newer.Figures {
		if i, ok := idx[f.Key()]; ok {
			r.Figures[i] = f
		} else {
			r.Figures = append(r.Figures, f)
		}
	}
	for sc, l := range newer.Loads {
		if r.Loads == nil {
			r.Loads = map[string]string{}
		}
		r.Loads[sc] = l
	}
	r.Started, r.Took, r.Machine, r.Options = newer.Started, newer.Took, newer.Machine, newer.Options
	r.Library, r.Server = newer.Library, newer.Server
	// A note of a scenario measured again ("scale: ...", what went wrong in
	// that run) is of the run whose figures are gone.
	r.Notes = slices.DeleteFunc(r.Notes, func(n string) bool {
		scenario, _, ok := strings.Cut(n, ": ")
		return ok && measured[scenario]
	})
	for _, n := range newer.Notes {
		if !slices.Contains(r.Notes, n) {
			r.Notes = append(r.Notes, n)
		}
	}
}

// scalePartOf names the part of the scale scenario f belongs to,
// "waiters" or "keys" ("" for the other scenarios).
func scalePartOf(f Figure) string {
	switch {
	case f.Scenario != Scale:
		return ""
	case strings.HasSuffix(f.Param, " waiters") || strings.HasSuffix(f.Param, " waiter"):
		return "waiters"
	}
	return "keys"
}

// ReadReport reads a report written by WriteReport.
func ReadReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// WriteReport writes r as indented JSON.
func WriteReport(path string, r *Report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
