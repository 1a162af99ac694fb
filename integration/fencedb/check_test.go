package fencedb

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/go-dsync/dsync/fence"
	"github.com/go-dsync/dsync/fence/fencesql"
)

// TestCheckRaisesAndRefuses: a first token is accepted, an equal one and
// a higher one too (raising the mark), a lower one is refused with the
// mark in the error, and a refusal changes nothing. All on one
// connection, so that on MySQL a key inserted after an update on the same
// connection is not taken for a refusal by the session's earlier
// LAST_INSERT_ID.
func TestCheckRaisesAndRefuses(t *testing.T) {
	each(t, func(t *testing.T, d fencesql.Dialect, db *sql.DB, f *fencesql.Fence) {
		ctx := testCtx(t)
		db.SetMaxOpenConns(1)
		steps := []struct {
			key   string
			token uint64
			stale bool   // refused
			mark  uint64 // after
		}{
			{"k", 5, false, 5},
			{"k", 5, false, 5},
			{"k", 7, false, 7},
			{"k", 6, true, 7},
			{"k", 1, true, 7},
			{"other", 2, false, 2}, // inserted after k's updates on this connection
			{"k", 7, false, 7},
			{"other", 1, true, 2},
			{"K", 1, false, 1},     // keys are bytes: no case folding
			{"k ", 1, false, 1},    // nor trailing-space padding
			{"k\x00", 1, false, 1}, // nor an end at NUL
			{"big", fence.MaxToken, false, fence.MaxToken},
			{"big", fence.MaxToken - 1, true, fence.MaxToken},
		}
		for _, s := range steps {
			err := commitCheck(t, ctx, db, f, s.key, s.token)
			if s.stale {
				var se *fence.StaleError
				if !errors.Is(err, fence.ErrStale) || !errors.As(err, &se) {
					t.Fatalf("Check(%q, %d) = %v, want a *fence.StaleError", s.key, s.token, err)
				}
				if se.Key != s.key || se.Token != s.token || se.Mark != s.mark {
					t.Errorf("Check(%q, %d): %+v, want mark %d", s.key, s.token, *se, s.mark)
				}
			} else if err != nil {
				t.Fatalf("Check(%q, %d) = %v, want nil", s.key, s.token, err)
			}
			if m := markOf(t, db, d, s.key); m != s.mark {
				t.Fatalf("after Check(%q, %d): mark %d, want %d", s.key, s.token, m, s.mark)
			}
		}
	})
}

// TestCheckRollbackUndoesTheRaise: a transaction that checked and rolled
// back leaves the mark as it was, and the key's row absent if it had
// none.
func TestCheckRollbackUndoesTheRaise(t *testing.T) {
	each(t, func(t *testing.T, d fencesql.Dialect, db *sql.DB, f *fencesql.Fence) {
		ctx := testCtx(t)
		tx, err := checkTx(t, ctx, db, f, "new", 3)
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		if m := markOf(t, db, d, "new"); m != 0 {
			t.Fatalf("mark %d after a rolled back first Check, want none", m)
		}
		if err := commitCheck(t, ctx, db, f, "k", 4); err != nil {
			t.Fatal(err)
		}
		tx, err = checkTx(t, ctx, db, f, "k", 9)
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		if m := markOf(t, db, d, "k"); m != 4 {
			t.Fatalf("mark %d after a rolled back raise to 9, want 4", m)
		}
		if err := commitCheck(t, ctx, db, f, "k", 5); err != nil {
			t.Fatalf("Check(5) after a rolled back raise to 9: %v", err)
		}
	})
}

// TestCheckHoldsTheLock: a transaction that checked holds the mark's lock
// to its end. A second transaction's Check of the key waits (PostgreSQL
// and MariaDB report it waiting for a row lock; on SQLite, another
// connection cannot take the write lock), and then decides on what the
// first committed: a later token is accepted after the first commits or
// rolls back; a token below the first's is refused once it commits, and
// accepted once it rolls back. The first's refused Check holds the lock
// too.
func TestCheckHoldsTheLock(t *testing.T) {
	each(t, func(t *testing.T, d fencesql.Dialect, db *sql.DB, f *fencesql.Fence) {
		cases := []struct {
			name          string
			first, second uint64
			commit        bool
			secondStale   bool
			mark          uint64
		}{
			{"later waits for commit", 5, 6, true, false, 6},
			{"stale waits for commit and is refused", 6, 5, true, true, 6},
			{"stale waits for rollback and is accepted", 6, 5, false, false, 5},
			{"later waits for rollback", 5, 6, false, false, 6},
		}
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				ctx := testCtx(t)
				key := string(rune('a' + i))
				if err := commitCheck(t, ctx, db, f, key, 1); err != nil { // the row exists: MariaDB locks no gap
					t.Fatal(err)
				}
				tx1, err := checkTx(t, ctx, db, f, key, c.first)
				if err != nil {
					t.Fatal(err)
				}
				if d == fencesql.SQLite && !sqliteWriteLocked(t, ctx, db) {
					t.Fatal("after Check, another connection can take SQLite's write lock")
				}
				done := make(chan error, 1)
				go func() {
					tx2, err := db.BeginTx(ctx, nil)
					if err != nil {
						done <- err
						return
					}
					defer tx2.Rollback()
					if err := f.Check(ctx, tx2, key, c.second); err != nil {
						done <- err
						return
					}
					done <- tx2.Commit()
				}()
				waitLockWaiters(t, ctx, db, d, 1, done)
				select {
				case err := <-done:
					if d != fencesql.SQLite {
						t.Fatalf("the second Check returned (%v) while the first transaction held the lock", err)
					}
					t.Fatalf("the second transaction ended (%v) while the first held SQLite's write lock", err)
				default:
				}
				if c.commit {
					err = tx1.Commit()
				} else {
					err = tx1.Rollback()
				}
				if err != nil {
					t.Fatal(err)
				}
				err = <-done
				if c.secondStale != errors.Is(err, fence.ErrStale) || !c.secondStale && err != nil {
					t.Fatalf("second Check(%d): %v, stale %v wanted", c.second, err, c.secondStale)
				}
				if m := markOf(t, db, d, key); m != c.mark {
					t.Fatalf("mark %d, want %d", m, c.mark)
				}
			})
		}
		t.Run("refused holds the lock", func(t *testing.T) {
			ctx := testCtx(t)
			if err := commitCheck(t, ctx, db, f, "r", 9); err != nil {
				t.Fatal(err)
			}
			tx1, err := checkTx(t, ctx, db, f, "r", 8)
			if !errors.Is(err, fence.ErrStale) {
				t.Fatalf("Check(8) under 9: %v", err)
			}
			if d == fencesql.SQLite {
				if !sqliteWriteLocked(t, ctx, db) {
					t.Fatal("after a refused Check, another connection can take SQLite's write lock")
				}
				return
			}
			done := make(chan error, 1)
			go func() { done <- commitCheckErr(ctx, db, f, "r", 10) }()
			waitLockWaiters(t, ctx, db, d, 1, done)
			_ = tx1.Rollback()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	})
}

// commitCheckErr is commitCheck for another goroutine than the test's.
func commitCheckErr(ctx context.Context, db *sql.DB, f *fencesql.Fence, key string, token uint64) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := f.Check(ctx, tx, key, token); err != nil {
		return err
	}
	return tx.Commit()
}

// TestCheckKeysAreIndependent: a transaction holding one key's lock does
// not hold another's (PostgreSQL and MariaDB: row locks; SQLite's write
// lock is the database's).
func TestCheckKeysAreIndependent(t *testing.T) {
	each(t, func(t *testing.T, d fencesql.Dialect, db *sql.DB, f *fencesql.Fence) {
		if d == fencesql.SQLite {
			t.Skip("SQLite's write lock is the whole database's")
		}
		ctx := testCtx(t)
		for _, k := range []string{"a", "b"} {
			if err := commitCheck(t, ctx, db, f, k, 1); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := checkTx(t, ctx, db, f, "a", 5); err != nil {
			t.Fatal(err)
		}
		// Returns while a's lock is held; a hang here is the failure.
		if err := commitCheck(t, ctx, db, f, "b", 3); err != nil {
			t.Fatal(err)
		}
		if err := commitCheck(t, ctx, db, f, "c", 3); err != nil { // a new key too
			t.Fatal(err)
		}
		if m := markOf(t, db, d, "b"); m != 3 {
			t.Fatalf("b's mark %d, want 3", m)
		}
	})
}
