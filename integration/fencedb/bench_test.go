package fencedb

import (
	"context"
	"database/sql"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/go-dsync/dsync/fence/fencesql"
)

// BenchmarkFencedTx measures what the check costs on PostgreSQL: the same
// small transaction (BEGIN; UPDATE one row; COMMIT) unfenced, with one
// more statement that does nothing (SELECT 1: the cost of one more round
// trip in the transaction), and fenced (Check first); and a bare round
// trip (SELECT 1 alone). Each iteration runs the four once, in an order
// drawn anew, on one connection of pgx's (its statement cache warm), so
// that the machine's drift falls on all four alike. Each reports its p50
// as a metric.
//
//	go test -run '^$' -bench FencedTx -benchtime 3000x ./integration/fencedb
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
	selectOne := func(q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}) error {
		var one int
		return q.QueryRowContext(ctx, "SELECT 1").Scan(&one)
	}
	tx := func(first func(tx *sql.Tx) error) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if first != nil {
			if err := first(tx); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, "UPDATE acct SET n = n + 1 WHERE id = $1", 1); err != nil {
			return err
		}
		return tx.Commit()
	}
	ops := []struct {
		name string
		op   func() error
	}{
		{"roundtrip", func() error { return selectOne(db) }},
		{"unfenced", func() error { return tx(nil) }},
		{"unfenced+roundtrip", func() error { return tx(func(tx *sql.Tx) error { return selectOne(tx) }) }},
		{"fenced", func() error { return tx(func(tx *sql.Tx) error { return f.Check(ctx, tx, "acct", 7) }) }},
	}
	times := make([][]time.Duration, len(ops))
	for _, o := range ops {
		if err := o.op(); err != nil { // warms the statement cache
			b.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	order := []int{0, 1, 2, 3}
	for b.Loop() {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, i := range order {
			start := time.Now()
			if err := ops[i].op(); err != nil {
				b.Fatal(err)
			}
			times[i] = append(times[i], time.Since(start))
		}
	}
	for i, o := range ops {
		b.ReportMetric(float64(p50(times[i]).Microseconds()), o.name+"-p50-µs")
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

// BenchmarkMarksAdmit measures an uncontended Admit and its release, on
// each dialect: one key, a rising token, one writer at a time. Each
// reports the p50 of Admit and of release as metrics.
//
//	go test -run '^$' -bench MarksAdmit -benchtime 1000x ./integration/fencedb
func BenchmarkMarksAdmit(b *testing.B) {
	for _, d := range []fencesql.Dialect{fencesql.PostgreSQL, fencesql.MySQL, fencesql.SQLite} {
		b.Run(d.String(), func(b *testing.B) {
			db, f := setup(b, d)
			m := marks(b, f, db)
			ctx := context.Background()
			var admit, release []time.Duration
			token := uint64(0)
			for b.Loop() {
				token++
				start := time.Now()
				rel, err := m.Admit(ctx, "k", token)
				if err != nil {
					b.Fatal(err)
				}
				mid := time.Now()
				rel()
				admit, release = append(admit, mid.Sub(start)), append(release, time.Since(mid))
			}
			b.ReportMetric(float64(p50(admit).Microseconds()), "admit-p50-µs")
			b.ReportMetric(float64(p50(release).Microseconds()), "release-p50-µs")
		})
	}
}
