package fencesql

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// The admissions table of Marks: a row per key admitted and not yet
// released, with the admission's number and its deadline in milliseconds
// of the database server's clock (SQLite: the host's).

// admitSuffix names the admissions table after the Fence's.
const admitSuffix = "_admit"

// AdmitTable returns the name of the table where Marks keeps its
// admissions. It is the Fence's table's name with "_admit" appended.
func (f *Fence) AdmitTable() string { return f.table + admitSuffix }

// AdmitDDL returns the statement that creates the admissions table of
// Marks. The statement creates it if it does not exist. It is for a
// migration of one's own; CreateTable runs it.
func (f *Fence) AdmitDDL() string {
	t := f.AdmitTable()
	switch f.dialect {
	case PostgreSQL:
		return "CREATE TABLE IF NOT EXISTS " + t + " (fence_key BYTEA PRIMARY KEY, admission BIGINT NOT NULL, until_ms BIGINT NOT NULL)"
	case MySQL:
		return "CREATE TABLE IF NOT EXISTS " + t + " (fence_key VARBINARY(512) NOT NULL PRIMARY KEY, admission BIGINT NOT NULL, until_ms BIGINT NOT NULL) ENGINE=InnoDB"
	default:
		return "CREATE TABLE IF NOT EXISTS " + t + " (fence_key BLOB NOT NULL PRIMARY KEY, admission INTEGER NOT NULL, until_ms INTEGER NOT NULL)"
	}
}

// nowMS is the server's clock in milliseconds since 1970. The deadlines
// are judged by it alone, never by a client's clock.
func (f *Fence) nowMS() string {
	switch f.dialect {
	case PostgreSQL:
		return "(extract(epoch from clock_timestamp()) * 1000)::bigint"
	case MySQL:
		return "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)"
	}
	return "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"
}

// keyArg is how a statement names key: a parameter (PostgreSQL: $n;
// SQLite: ?), or on MySQL a literal, so that the statement needs no
// parameters (see raiseMySQL).
func (f *Fence) keyArg(key string, n int, args *[]any) string {
	switch f.dialect {
	case MySQL:
		return fmt.Sprintf("X'%x'", key)
	case PostgreSQL:
		*args = append(*args, []byte(key))
		return fmt.Sprintf("$%d", n)
	}
	*args = append(*args, []byte(key))
	return "?"
}

// claimSQL takes key's row for admission id with a deadline lease ahead,
// if the row is absent or its deadline has passed; else it changes
// nothing. A claim that lands late takes a row that nobody holds, for a
// lease at most.
func (f *Fence) claimSQL(key string, id int64, lease time.Duration) (string, []any) {
	var args []any
	t, now, ms := f.AdmitTable(), f.nowMS(), lease.Milliseconds()
	k := f.keyArg(key, 1, &args)
	switch f.dialect {
	case PostgreSQL:
		return fmt.Sprintf("INSERT INTO %s AS a (fence_key, admission, until_ms) VALUES (%s, %d, %s + %d) "+
			"ON CONFLICT (fence_key) DO UPDATE SET admission = EXCLUDED.admission, until_ms = EXCLUDED.until_ms "+
			"WHERE a.until_ms <= %s", t, k, id, now, ms, now), args
	case MySQL:
		// The second assignment sees the first's result.
		return fmt.Sprintf("INSERT INTO %s (fence_key, admission, until_ms) VALUES (%s, %d, %s + %d) "+
			"ON DUPLICATE KEY UPDATE admission = IF(until_ms <= %s, VALUES(admission), admission), "+
			"until_ms = IF(admission = VALUES(admission), VALUES(until_ms), until_ms)", t, k, id, now, ms, now), args
	}
	return fmt.Sprintf("INSERT INTO %s (fence_key, admission, until_ms) VALUES (%s, %d, %s + %d) "+
		"ON CONFLICT (fence_key) DO UPDATE SET admission = excluded.admission, until_ms = excluded.until_ms "+
		"WHERE until_ms <= %s", t, k, id, now, ms, now), args
}

// claimedSQL reads which admission holds key's row, and the
// milliseconds left to its deadline.
func (f *Fence) claimedSQL(key string) (string, []any) {
	var args []any
	k := f.keyArg(key, 1, &args)
	return fmt.Sprintf("SELECT admission, until_ms - %s FROM %s WHERE fence_key = %s", f.nowMS(), f.AdmitTable(), k), args
}

// renewSQL moves the deadline of admission id's row a lease ahead of
// now, if the row is still id's and its deadline has not passed: a
// renewal never revives a row the next Admit may have judged ended, and
// never moves a deadline back, however late it lands.
func (f *Fence) renewSQL(key string, id int64, lease time.Duration) (string, []any) {
	var args []any
	k := f.keyArg(key, 1, &args)
	greatest := "GREATEST"
	if f.dialect == SQLite {
		greatest = "max"
	}
	now := f.nowMS()
	return fmt.Sprintf("UPDATE %s SET until_ms = %s(until_ms, %s + %d) WHERE fence_key = %s AND admission = %d AND until_ms > %s",
		f.AdmitTable(), greatest, now, lease.Milliseconds(), k, id, now), args
}

// unclaimSQL deletes admission id's row of key, and no other
// admission's.
func (f *Fence) unclaimSQL(key string, id int64) (string, []any) {
	var args []any
	k := f.keyArg(key, 1, &args)
	return fmt.Sprintf("DELETE FROM %s WHERE fence_key = %s AND admission = %d", f.AdmitTable(), k, id), args
}

// The most an Admit waits between two claims of a row that another
// admission holds, so that it takes over soon after a release.
const claimPollMax = 200 * time.Millisecond

// claim claims the key's row and raises the mark in one transaction
// (step 2 of Marks), waiting while another admission holds the row.
func (a *admission) claim(ctx context.Context, token uint64) error {
	wait := 2 * time.Millisecond
	for {
		left, err := a.tryClaim(ctx, token)
		if err != nil || left < 0 {
			return err
		}
		// Another admission holds the row: wait for its release, or its
		// deadline if sooner.
		t := time.NewTimer(min(wait, left+time.Millisecond))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		}
		wait = min(2*wait, claimPollMax)
	}
}

// tryClaim claims the key's row for the admission and raises the mark,
// in a transaction on a connection of its own, at READ COMMITTED so that
// it reads what its own statements and the latest commits wrote. It
// returns -1 and nil once both committed; the time left to the deadline
// of another admission that holds the row (the transaction rolled back);
// or the claim's or the raise's error (a *fence.StaleError if the mark
// is above token: nothing changed).
func (a *admission) tryClaim(ctx context.Context, token uint64) (time.Duration, error) {
	c, err := a.m.db.Conn(ctx)
	if err != nil {
		return 0, ioErr(ctx, "admit", a.key, err)
	}
	defer c.Close()
	var opts *sql.TxOptions
	if a.m.f.dialect != SQLite {
		opts = &sql.TxOptions{Isolation: sql.LevelReadCommitted}
	}
	tx, err := c.BeginTx(ctx, opts)
	if err != nil {
		return 0, ioErr(ctx, "admit", a.key, err)
	}
	// From the claim's statement to a known end of the transaction, the
	// row may be this admission's: end deletes it if so.
	a.claimed = true
	rolledBack := func() {
		if tx.Rollback() == nil {
			a.claimed = false
		}
	}
	ours, left, err := a.m.f.claimIn(ctx, tx, a.key, a.id, a.m.lease)
	if err != nil || !ours {
		rolledBack()
		if err != nil {
			return 0, ioErr(ctx, "admit", a.key, err)
		}
		return left, nil
	}
	if err := a.m.f.raise(ctx, tx, a.key, token); err != nil {
		rolledBack()
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, ioErr(ctx, "admit", a.key, err)
	}
	return -1, nil
}

// claimIn runs the claim in tx and tells whether the row is now
// admission id's, or else the time left to its holder's deadline. On
// PostgreSQL and SQLite the rows the claim reports say it (1: inserted
// or taken over; 0: another's, which a second statement then reads); on
// MySQL, whose count depends on the client's flags, the second statement
// reads the row's admission every time.
func (f *Fence) claimIn(ctx context.Context, tx *sql.Tx, key string, id int64, lease time.Duration) (ours bool, left time.Duration, err error) {
	stmt, args := f.claimSQL(key, id, lease)
	res, err := tx.ExecContext(ctx, stmt, args...)
	if err != nil {
		return false, 0, err
	}
	if f.dialect != MySQL {
		n, err := res.RowsAffected() // read while tx holds its connection
		if err != nil || n == 1 {
			return n == 1, 0, err
		}
	}
	stmt, args = f.claimedSQL(key)
	var holder, leftMS int64
	if err := tx.QueryRowContext(ctx, stmt, args...).Scan(&holder, &leftMS); err != nil {
		return false, 0, err
	}
	return holder == id, time.Duration(max(leftMS, 0)) * time.Millisecond, nil
}

// renewing renews the admission's row every third of the lease until
// end stops it. A renewal that fails is tried again at the next tick;
// the row ends at its deadline if none succeeds.
func (a *admission) renewing(ctx context.Context) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	a.stopRenew, a.renewDone = cancel, make(chan struct{})
	every := a.m.lease / 3
	go func() {
		defer close(a.renewDone)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			rctx, cancel := context.WithTimeout(ctx, every)
			stmt, args := a.m.f.renewSQL(a.key, a.id, a.m.lease)
			_, _ = a.m.db.ExecContext(rctx, stmt, args...) // its Result is not read
			cancel()
		}
	}()
}

// unclaim deletes admission id's row of key on a connection of the
// pool's.
func (m *marks) unclaim(ctx context.Context, key string, id int64) error {
	stmt, args := m.f.unclaimSQL(key, id)
	_, err := m.db.ExecContext(ctx, stmt, args...) // its Result is not read
	return err
}
