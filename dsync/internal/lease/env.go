package lease

import (
	"context"
	"log/slog"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// A Hold is one acquisition that relies on a session: dsync's hold. Its
// methods but TellLost may be called under the Keeper's lock (Start and
// MarkLost are, where a session is joined or retired), so they must not
// call the Keeper.
type Hold interface {
	comparable
	// Key is the key the hold's claim is of, whose coverage it relies on.
	Key() string
	// Ref is the hold's claim (what a suspension checks, resumes or
	// marks dead).
	Ref() queue.Ref
	// Start makes the hold active, valid until deadline (on the Params'
	// clock); it reports false if deadline has passed.
	Start(deadline time.Time) bool
	// MarkLost ends an active hold without its caller, with reason, and
	// reports whether it did (false if it was not active).
	MarkLost(reason error) bool
	// TellLost reports the loss that MarkLost made, under no lock.
	TellLost()
}

// Env is what a Keeper asks of its Client: the store's calls, and where
// it reports. Every function must be set, except Revocations.
type Env[H Hold] struct {
	// Open opens a session valid for ttl from when the request was sent,
	// and returns its id.
	Open func(ctx context.Context, ttl time.Duration) (string, error)
	// Renew extends session id to ttl from when the request was sent; it
	// returns an error wrapping Errors.Gone if the store no longer knows
	// the session.
	Renew func(ctx context.Context, id string, ttl time.Duration) error
	// Revocations reads a session's revocation; nil if the store records
	// none.
	Revocations driver.RevokeStore
	// CoverEnd is when the coverage of key's segment ends, in store time
	// (zero: unknown); Refresh extends the coverage of keys, and returns
	// those whose segment lapsed; Span is the store's bucket span, and
	// ServerLatest the latest the store's time may be now.
	CoverEnd     func(key string) time.Time
	Refresh      func(ctx context.Context, keys []string) (lapsed []string, err error)
	Span         func() time.Duration
	ServerLatest func() time.Time

	// Go runs f in a goroutine that the Client waits for on Close.
	Go     func(f func())
	Logger *slog.Logger

	// Renewed: a renewal was confirmed, after latency, with headroom left
	// to the deadline it replaced. Outcome: a renewal answered, failed or
	// not (Gone aside).
	Renewed func(latency, headroom time.Duration)
	Outcome func(failed bool)
	// RenewFailed reports err, a failed renewal, at level, to the users
	// of holds (those of the session, or those it lost when it was
	// retired); RefreshFailed reports err, a failed refresh of the
	// coverage, to the users of holds.
	RenewFailed   func(holds []H, err error, level slog.Level)
	RefreshFailed func(holds []H, err error)

	// With an outage grace (Params.Grace > 0), suspend.go: Suspend makes
	// the engine's suspension of session id, whose lease l (on the clock
	// mono reads) has just been suspended, with claims, those of the
	// holds it lost and of those a resume kept (queue.Engine.SuspendOn); an error retires the
	// session as without a grace. It is called under the Keeper's lock:
	// it must not block, nor call the Keeper. Probe reads from the store
	// (nothing the protocol writes): nil when the store replied. Both
	// must be set for the Keeper to suspend. Resumed (may be nil) is told,
	// under no lock, the session resumed, the holds whose claims its resume
	// kept, and when (on the Keeper's clock) it was suspended: the holds stay
	// lost, and those still counted are kept (retake.go) until a new
	// hold takes each over (Retake) or its owner lets it go (Remove,
	// LetGo) and ends its claim; the holds removed meanwhile (their
	// owner gave them up while suspended) are told too, their claims
	// live again and theirs to end.
	Suspend func(id string, l *queue.Lease, mono func() time.Duration, claims []queue.Ref) (*queue.Suspension, error)
	Probe   func(ctx context.Context, id string) error
	Resumed func(session string, holds []H, suspended time.Time)
	// Release (may be nil) is told, under no lock, each hold whose claim
	// a resume kept and its owner gave up: removed while its session was
	// suspended, or kept a TTL after the resume without a hold taking it
	// over (LetGo). The claim holds, and is the caller's to end.
	Release func(h H)
	// Lapsed (may be nil) is told, under no lock, each hold lost because
	// its key's segment lapsed (coverage.go), a margin after the loss:
	// its session lives on, so its claim would stay in the queue, ahead
	// of every waiter of its key, for as long as the session does. The
	// claim is the caller's to end, as an unlock would (it did hold).
	// The margin is the head start a lost lease gives between Lost() and
	// the store's expiry: the hold's work is told to stop first.
	Lapsed func(h H)

	Errors Errors
}

// Errors are the Client's errors that a Keeper's own wrap or recognize.
type Errors struct {
	Lost    error // what every reason a session is retired for wraps
	Closed  error // Enter after Close
	Revoked error // a revocation was read
	Gone    error // Renew: the store no longer knows the session
	// Suspended (may be nil) is what the reason a suspension loses holds
	// for wraps, beside Lost.
	Suspended error
	// Ended reports whether err is a call that its context's end cut
	// short (a ctxerr.Ended), not the store's answer.
	Ended func(err error) bool
}
