package dsyncotel_test

import (
	"context"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	dsyncotel "github.com/go-dsync/dsync/contrib/otel"
	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/leader"
)

// The alert rules (alerts/dsync.rules.yml) name metrics and labels as
// Prometheus sees this package's instruments through OpenTelemetry's
// Prometheus exporter. Every name they use must be one a scrape of a
// process using Observer (WithKeys) and LeaderObserver shows, so that
// renaming an instrument or an attribute breaks this test, not the
// alerts in production. What each rule does with the series is tested
// by promtool (alerts/dsync.rules_test.yml, run by .ci/run).
func TestAlertRulesNameScrapedSeries(t *testing.T) {
	names, labels := scrapeScenario(t)
	rules, err := os.ReadFile("alerts/dsync.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	var exprs []string
	for _, block := range regexp.MustCompile(`(?m)^\s+expr: (\|\n(?:\s{10}.*\n)+|.*)`).FindAllStringSubmatch(string(rules), -1) {
		exprs = append(exprs, block[1])
	}
	if len(exprs) != 7 {
		t.Fatalf("found %d rule expressions, want the 7 alerts", len(exprs))
	}
	used := map[string]bool{}
	for _, e := range exprs {
		for _, id := range regexp.MustCompile(`\b(?:dsync|leader)_[a-z_]+\b`).FindAllString(e, -1) {
			used[id] = true
		}
	}
	for id := range used {
		if !names[id] && !labels[id] {
			t.Errorf("the rules use %s, which no scraped series or label is named (metrics: %v)", id, slices.Sorted(maps.Keys(names)))
		}
	}
	for _, want := range []string{"leader_election_master_status", "dsync_hold_age_seconds", "dsync_lease_renewal_failures_total", "dsync_waiting", "dsync_hold_lost_total", "dsync_lockset_deadlocks_total"} {
		if !used[want] {
			t.Errorf("no rule uses %s", want)
		}
	}
}

// scrapeScenario runs a process that holds, waits, fails to renew and
// leads, and returns the metric names and label names a Prometheus
// scrape of it shows.
func scrapeScenario(t *testing.T) (names, labels map[string]bool) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	meter := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp)).Meter("dsync")
	synctest.Test(t, func(t *testing.T) {
		obs, err := dsyncotel.Observer(meter, dsyncotel.WithKeys())
		if err != nil {
			t.Fatal(err)
		}
		transitions, err := dsyncotel.LeaderObserver(meter)
		if err != nil {
			t.Fatal(err)
		}
		c := memClient(t, dsync.ClientWithObserver(obs))
		m, _ := dsync.NewMutex(c, "nightly")
		m.Lock()
		e, err := leader.NewElection(c, "billing", leader.WithObserver(transitions))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Campaign(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		names, labels = map[string]bool{}, map[string]bool{}
		for _, f := range families {
			names[f.GetName()] = true
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = true
				}
			}
		}
		m.Unlock()
		_ = e.Close()
	})
	t.Logf("scraped: %s", strings.Join(slices.Sorted(maps.Keys(names)), " "))
	return names, labels
}
