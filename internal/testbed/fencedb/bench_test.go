package fencedb

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/go-dsync/dsync/fence/fencesql"
)

// BenchmarkFencedTx measures what the check costs on PostgreSQL: the same
// small transaction (BEGIN; UPDATE one row; COMMIT) without and with
// Check first, and a bare round trip (SELECT 1), on one connection of
// pgx's (its statement cache warm). Each reports its p50 as a metric.
//
//	go test -run '^$' -bench FencedTx -benchtime 3000x ./internal/testbed/fencedb
func BenchmarkFencedTx(b *testing.B) {
	db, f := setup(b, fencesql.PostgreSQL)
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	if _, err := db.Exec("CREATE TABLE acct (id INT PRIMARY KEY, n BIGINT NOT NULL)"); err != nil {
		b.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO acct VALUES (1, 0)"); err != nil {
		b.Fatal(err)
	}
	tx := func(fenced bool) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if fenced {
			if err := f.Check(ctx, tx, "acct", 7); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, "UPDATE acct SET n = n + 1 WHERE id = $1", 1); err != nil {
			return err
		}
		return tx.Commit()
	}
	for _, c := range []struct {
		name string
		op   func() error
	}{
		{"roundtrip", func() error {
			var one int
			return db.QueryRowContext(ctx, "SELECT 1").Scan(&one)
		}},
		{"unfenced", func() error { return tx(false) }},
		{"fenced", func() error { return tx(true) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			if err := c.op(); err != nil { // warms the statement cache
				b.Fatal(err)
			}
			times := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				if err := c.op(); err != nil {
					b.Fatal(err)
				}
				times = append(times, time.Since(start))
			}
			b.ReportMetric(float64(p50(times).Microseconds()), "p50-µs")
		})
	}
}

func p50(ts []time.Duration) time.Duration {
	if len(ts) == 0 {
		return 0
	}
	ts = slices.Clone(ts)
	slices.Sort(ts)
	return ts[len(ts)/2]
}
