package fencesql

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-dsync/dsync/fence"
)

// Marks returns a fence.Marks that keeps its marks in the Fence's table
// in db. A bad option value (or a nil MarksOption) is an error it returns.
//
// It is for writers that do not run in a transaction of db's (an HTTP
// handler that writes files). Several instances of a service that share
// db admit one writer of a key at a time among them, and keep the marks
// across restarts. db's tables are the Fence's and its admissions table
// (AdmitTable), which CreateTable creates.
//
// # How Admit admits
//
// An admission is a row of the admissions table: the key, a number of
// the admission's own, and a deadline in the database server's time.
// Admit takes four steps:
//
//  1. It takes the key's turn, on a connection of its own and in a
//     transaction (at READ COMMITTED, whatever the server's default)
//     that it keeps until release: PostgreSQL, an advisory lock of the
//     transaction's (pg_advisory_xact_lock) on a hash of the table and
//     the key; MySQL, a named lock of the session's (GET_LOCK); SQLite,
//     a turn of this process's for db, and no transaction. Another Admit
//     of the key in a live session waits here until release.
//  2. In one short transaction of its own, on another connection, it
//     claims the key's admission row, which it may only while the row
//     is absent or its deadline has passed, and runs the raise-or-refuse
//     statement of Check. While an earlier admission's row stands (its
//     session ended under it, or it is another process's on SQLite),
//     Admit rolls back, waits, and tries again, within ctx. Otherwise it
//     commits: the mark is token, and the row is this admission's, or
//     Admit refuses and neither changed.
//  3. PostgreSQL, MySQL: it locks the mark's row in its transaction
//     (SELECT ... FOR UPDATE) and reads the mark: if a transaction's
//     Check raised it above token since step 2, Admit refuses. From here
//     to release, Check of the key in a transaction waits too.
//  4. While the writer writes, Admit's process renews the admission's
//     deadline every third of the admission's lease (WithAdmitLease),
//     on a connection of the pool's. release deletes the row in the
//     transaction of step 1 and commits it, which frees the locks; if
//     that fails (the session is gone), it deletes the row on another
//     connection.
//
// So the session's locks (the turn, the row lock) are not what keeps
// another writer out: the row is. When the server ends the admitted
// session while the writer writes (PostgreSQL's
// idle_in_transaction_session_timeout, MariaDB's
// idle_transaction_timeout, a failover, a dropped connection), the locks
// go, the row stays, and the next Admit of the key waits until release
// deletes it. A transaction's Check of the key, which does not read the
// admissions table, no longer waits then: it raises the mark, and every
// later check (Admit or Check) of the admitted writer's token is
// refused.
//
// The row's deadline is a lease, renewed by the live process that holds
// it. The next Admit may take over only once it passed in the server's
// time: when the admitted process died, or was stopped or cut off from
// the database for a whole lease. A process stopped (SIGSTOP, a suspended
// VM) while its writer is inside an admission may therefore write after
// the next writer was admitted. That needs it to stay stopped a lease or
// more, and its session to have ended meanwhile. The lease bounds how long a key
// waits for an admission whose process will never release it. A
// writer that may run longer than it can stay unreachable uses a
// transaction's Check instead, which fences its writes themselves.
//
// Since the mark is committed before a write is admitted, a release that
// fails undoes nothing of the mark. Since the turn is taken before the
// raise, no other Admit of the key decides on a raise whose writer has
// not yet written. Every statement of Admit, of its renewals and of
// release is harmless if it lands late:
//   - a claim or a renewal names the admission's own number and only ever
//     moves its deadline forward;
//   - a delete removes only the admission's own row;
//   - a row that nobody renews or deletes ends at its deadline.
//
// # What it costs
//
// An admitted writer keeps one of db's connections until release. Admit
// needs a second one while it claims and raises, and for each renewal.
// db's pool (SetMaxOpenConns) must have room for them, and for what the
// writers do with db themselves. release is bounded by
// WithReleaseTimeout.
//
// On SQLite, Admit holds no lock of the database's while the writer
// writes. So a writer may write to the same database (in its own
// transaction, with Check or without), and a transaction's Check of the
// key does not wait for the writer there. The turn is this process's, and
// other processes that share the file wait for the admission's row. On
// PostgreSQL and MySQL, a writer must not Check its own key in a
// transaction of db's while admitted: the admission holds the mark's row
// lock until release, so that Check would wait for it.
//
// A process stopped while its writer is admitted holds the key as long
// as it stays stopped, up to what the server allows. A transaction's
// Check of the key waits until the server ends the admitted session
// (idle_in_transaction_session_timeout, idle_transaction_timeout, or the
// waiter's own lock_timeout, statement_timeout, innodb_lock_wait_timeout
// first). The next Admit waits for that, and then for the row's lease,
// which the stopped process no longer renews.
func (f *Fence) Marks(db *sql.DB, opts ...MarksOption) (fence.Marks, error) {
	m := &marks{f: f, db: db, lease: DefaultAdmitLease, releaseTimeout: DefaultReleaseTimeout}
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("fencesql: Marks with a nil option")
		}
		if err := o(m); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Defaults of Marks' options.
const (
	// DefaultAdmitLease is the lease of an admission unless
	// WithAdmitLease sets another.
	DefaultAdmitLease = 30 * time.Second
	// DefaultReleaseTimeout bounds release unless WithReleaseTimeout
	// sets another bound.
	DefaultReleaseTimeout = 10 * time.Second
)

// A MarksOption configures Marks.
type MarksOption func(*marks) error

// WithAdmitLease sets the lease of an admission's row (default
// DefaultAdmitLease, 30 s). The lease is how long after its last renewal,
// in the database server's time, the next Admit of the key may take over an
// admission whose session ended and whose process does not release it. Its
// process renews it every third of d while the writer writes. d must be at
// least one second.
func WithAdmitLease(d time.Duration) MarksOption {
	return func(m *marks) error {
		if d < time.Second {
			return fmt.Errorf("fencesql: WithAdmitLease(%v): must be at least 1s", d)
		}
		m.lease = d
		return nil
	}
}

// WithReleaseTimeout bounds the time release takes (default
// DefaultReleaseTimeout, 10 s). So a database that stops answering does not
// hold the writer (an HTTP handler's response) longer. A release that runs
// out ends its session. The admission's row then ends at its deadline,
// WithAdmitLease after its last renewal, and the key waits for it until
// then. d must be positive.
func WithReleaseTimeout(d time.Duration) MarksOption {
	return func(m *marks) error {
		if d <= 0 {
			return fmt.Errorf("fencesql: WithReleaseTimeout(%v): must be positive", d)
		}
		m.releaseTimeout = d
		return nil
	}
}

type marks struct {
	f              *Fence
	db             *sql.DB
	lease          time.Duration
	releaseTimeout time.Duration
}

// sqliteTurns holds the turn of each SQLite database a Marks admits to:
// a channel of capacity 1 per *sql.DB, full while a writer is admitted.
var sqliteTurns sync.Map

// Admit implements fence.Marks.
func (m *marks) Admit(ctx context.Context, key string, token uint64) (func(), error) {
	if err := fence.Check(key, token); err != nil {
		return nil, err
	}
	a := &admission{m: m, key: key, id: newAdmissionID()}
	if err := a.admit(ctx, token); err != nil {
		a.end()
		return nil, err
	}
	a.renewing(ctx)
	var once sync.Once
	return func() { once.Do(a.end) }, nil
}

// An admission is one Admit's number, its connection and transaction
// (none on SQLite), and its renewals.
type admission struct {
	m       *marks
	key     string
	id      int64
	conn    *sql.Conn // in a transaction begun by BEGIN, nil on SQLite
	turn    chan struct{}
	claimed bool // the row may be this admission's: delete it at the end

	stopRenew context.CancelFunc
	renewDone chan struct{}
}

// newAdmissionID is a random positive number: two admissions of a key
// never share one in practice (a claim and a renewal name it).
func newAdmissionID() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return int64(binary.BigEndian.Uint64(b[:])>>1) | 1
}

// admit takes the key's turn (step 1), claims the admission's row and
// raises the mark (step 2), and on PostgreSQL and MySQL locks the mark's
// row, refusing if a Check raised it above token since (step 3).
func (a *admission) admit(ctx context.Context, token uint64) error {
	if err := a.takeTurn(ctx); err != nil {
		return err
	}
	if err := a.claim(ctx, token); err != nil {
		return err
	}
	if a.conn == nil {
		return nil
	}
	stmt, args := a.m.f.lockSQL(a.key)
	var mark int64
	err := a.conn.QueryRowContext(ctx, stmt, args...).Scan(&mark)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("fencesql: admit of key %q: its mark's row is gone from %s", a.key, a.m.f.table)
	case err != nil:
		return ioErr(ctx, "admit", a.key, err)
	case uint64(mark) > token:
		return &fence.StaleError{Key: a.key, Token: token, Mark: uint64(mark)}
	case uint64(mark) < token:
		return fmt.Errorf("fencesql: the mark of key %q is %d after a check of token %d: is %s a table of fencesql's?", a.key, mark, token, a.m.f.table)
	}
	return nil
}

// takeTurn waits for the key's turn: on PostgreSQL an advisory lock of
// the transaction's, on MySQL a named lock of the session's, on SQLite
// a turn of the process's.
func (a *admission) takeTurn(ctx context.Context) error {
	if a.m.f.dialect == SQLite {
		v, _ := sqliteTurns.LoadOrStore(a.m.db, make(chan struct{}, 1))
		turn := v.(chan struct{})
		select {
		case turn <- struct{}{}:
			a.turn = turn
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	conn, err := a.m.db.Conn(ctx)
	if err != nil {
		return ioErr(ctx, "admit", a.key, err)
	}
	a.conn = conn
	begin := "BEGIN ISOLATION LEVEL READ COMMITTED"
	if a.m.f.dialect == MySQL {
		begin = "START TRANSACTION"
		if _, err := conn.ExecContext(ctx, "SET TRANSACTION ISOLATION LEVEL READ COMMITTED"); err != nil {
			return ioErr(ctx, "admit", a.key, err)
		}
	}
	if _, err := conn.ExecContext(ctx, begin); err != nil {
		return ioErr(ctx, "admit", a.key, err)
	}
	if a.m.f.dialect == PostgreSQL {
		_, err = conn.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", a.m.f.lockID(a.key))
	} else {
		var got sql.NullInt64
		err = conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 31536000)", a.m.f.lockName(a.key)).Scan(&got)
		if err == nil && got.Int64 != 1 {
			err = fmt.Errorf("GET_LOCK returned %v", got)
		}
	}
	if err != nil {
		return ioErr(ctx, "admit", a.key, err)
	}
	return nil
}

// end stops the renewals, deletes the admission's row and ends the
// transaction, which frees the locks, and gives the turn back, all
// within the release timeout. Whatever fails here leaves at most a row
// that ends at its deadline.
func (a *admission) end() {
	if a.stopRenew != nil {
		a.stopRenew()
		<-a.renewDone
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.m.releaseTimeout)
	defer cancel()
	if a.conn != nil {
		if !a.endTx(ctx) {
			// The session is not known to be clean: end it rather than
			// give the pool a connection inside a transaction.
			_ = a.conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		_ = a.conn.Close()
	}
	if a.claimed {
		// The row outlived the transaction (its commit failed, or
		// there is none on SQLite): delete it on another connection.
		_ = a.m.unclaim(ctx, a.key, a.id)
	}
	if a.turn != nil {
		<-a.turn
	}
}

// endTx deletes the admission's row in the transaction of step 1 and
// commits (or rolls back if the row was never claimed), and on MySQL
// gives the named lock back. It reports whether the session is clean.
func (a *admission) endTx(ctx context.Context) bool {
	end := "ROLLBACK"
	if a.claimed {
		end = "COMMIT"
		stmt, args := a.m.f.unclaimSQL(a.key, a.id)
		if _, err := a.conn.ExecContext(ctx, stmt, args...); err != nil {
			return false
		}
	}
	if _, err := a.conn.ExecContext(ctx, end); err != nil {
		return false
	}
	a.claimed = false // deleted, and committed
	if a.m.f.dialect == MySQL {
		// The named lock is the session's.
		if _, err := a.conn.ExecContext(ctx, "DO RELEASE_LOCK(?)", a.m.f.lockName(a.key)); err != nil {
			return false
		}
	}
	return true
}

// lockID is the key's advisory lock on PostgreSQL: a hash of the table
// and the key. Two keys that share one only wait for each other.
func (f *Fence) lockID(key string) int64 {
	h := sha256.Sum256([]byte(f.table + "\x00" + key))
	return int64(binary.BigEndian.Uint64(h[:8]))
}

// lockName is the key's named lock on MySQL (at most 64 characters): a
// hash of the table and the key.
func (f *Fence) lockName(key string) string {
	h := sha256.Sum256([]byte(f.table + "\x00" + key))
	return "dsync_fence:" + hex.EncodeToString(h[:20])
}
