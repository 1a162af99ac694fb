package dsyncmongo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
)

// How the store sends a write: with the write timeout where the
// deployment replicates, through the tests' fault hook, and again after
// a transient error.

// A writer sends the store's writes, and keeps what their outcomes tell
// of whether the server is reachable, for the writes on the way out
// (closing.go). Every type of the store writes through it.
type writer struct {
	cfg      *config
	platform *platform    // FerretDB has no write timeout
	clock    *serverClock // a failed write may mean a new primary

	// answeredAt is when the server last answered a write, and
	// unansweredSent when the last write it did not answer was sent, on
	// cfg.mono's scale (noteAnswer); guarded by mu, which is held for
	// nothing else (the feed holds its insertMu around a write, so that
	// lock comes before this one).
	mu             sync.Mutex
	answeredAt     time.Duration
	unansweredSent time.Duration
	// closeBy is the deadline of the writes on the way out, once Close
	// has begun (beginClose).
	closeBy atomic.Pointer[time.Time]
}

// write runs f, a write named op (for the test hook), with the write
// timeout (WithWriteTimeout) on servers that replicate, and makes a
// timeout read as one.
func (w *writer) write(ctx context.Context, op string, f func(context.Context) error) error {
	sent := w.cfg.mono()
	if w.cfg.writeTimeout <= 0 || w.platform.isFerret() {
		err := w.cfg.fault(op)
		if err == nil {
			err = f(ctx)
		}
		w.clock.noteFailure(err)
		w.noteAnswer(sent, err)
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, w.cfg.writeTimeout)
	defer cancel()
	err := w.cfg.fault(op)
	if err == nil {
		err = f(wctx)
	}
	w.clock.noteFailure(err)
	w.noteAnswer(sent, err)
	if err != nil && ctx.Err() == nil && (wctx.Err() != nil || serverTimeout(err)) {
		return &writeTimeoutError{limit: w.cfg.writeTimeout, err: err}
	}
	return err
}

// serverTimeout reports whether the server reports a timeout: the
// command's maxTimeMS expired (50), or the write concern timed out
// (WriteConcernFailed, 64, for a wtimeout the deployment's default write
// concern may set).
func serverTimeout(err error) bool {
	var we mongo.WriteException
	if errors.As(err, &we) && we.WriteConcernError != nil {
		if c := we.WriteConcernError.Code; c == 50 || c == 64 {
			return true
		}
	}
	var ce mongo.CommandError
	return errors.As(err, &ce) && ce.Code == 50
}

// writeTimeoutError is a write the server did not acknowledge in time.
type writeTimeoutError struct {
	limit time.Duration
	err   error
}

func (e *writeTimeoutError) Error() string {
	return fmt.Sprintf("not acknowledged within the write timeout of %v "+
		"(on a replica set, a majority of its members may be unreachable, so the write concern cannot be satisfied; "+
		"the outcome is unknown): %v", e.limit, e.err)
}

func (e *writeTimeoutError) Unwrap() error { return e.err }

func (e *writeTimeoutError) Is(target error) bool { return target == ErrWriteTimeout }

// transient reports whether a failed write is worth sending again at
// once: the server says so (the RetryableWriteError label MongoDB puts on
// errors during failovers and shutdowns, or a WriteConflict, 112),
// FerretDB's SQLite was busy with another write ("database is locked",
// SQLITE_BUSY, reported as an internal error) or had not yet caught up
// with a collection that other connections were creating at that moment
// ("no such table", seen when several processes start on a new
// collection at once), or the connection failed.
// A timeout is not: the caller's time is running out, or the write
// concern cannot be satisfied.
func transient(err error) bool {
	if err == nil || errors.Is(err, ErrWriteTimeout) || errors.Is(err, context.Canceled) || mongo.IsTimeout(err) {
		return false
	}
	var se mongo.ServerError
	if errors.As(err, &se) {
		if se.HasErrorLabel("RetryableWriteError") || se.HasErrorCode(112) {
			return true
		}
		msg := se.Error()
		if strings.Contains(msg, "SQLITE_BUSY") || strings.Contains(msg, "database is locked") || strings.Contains(msg, "SQL logic error: no such table") {
			return true
		}
	}
	var we mongo.WriteError // one document's, in a bulk write's reply (InsertEach)
	if errors.As(err, &we) && (we.Code == 112 || strings.Contains(we.Message, "SQLITE_BUSY") || strings.Contains(we.Message, "database is locked")) {
		return true
	}
	return mongo.IsNetworkError(err)
}

// endAttempts is how many times an end marker is sent while it fails
// transiently.
const endAttempts = 3

// retry runs f up to attempts times while it fails transiently and ctx
// lasts, pausing between attempts (retryPause, doubling), and says each
// failure it sends again to log at Debug: FerretDB's SQLite answers
// "database is locked" while another write holds it, and attempts sent
// at once meet the same write.
func retry(ctx context.Context, log *slog.Logger, attempts int, what string, f func() error) error {
	pause := retryPause
	for i := 1; ; i++ {
		err := f()
		if err == nil || i >= attempts || !transient(err) || ctx.Err() != nil {
			return err
		}
		log.Debug("dsyncmongo: write failed; sending it again", slog.String("write", what), slog.Any("err", err))
		t := time.NewTimer(jitter(pause))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
		pause *= 2
	}
}

// retryPause is the first pause between attempts of a write that failed
// transiently.
const retryPause = 20 * time.Millisecond
