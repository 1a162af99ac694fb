package dsync

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/lease"
	"github.com/go-dsync/dsync/internal/clienthook"
)

// Defaults of the lease (the Client's options) and of a primitive's.
const (
	// DefaultTTL is the default lease length. The lease length is how long
	// a hold stays valid without a successful renewal, and so how long a
	// crashed holder blocks others.
	DefaultTTL = 15 * time.Second
	// MinTTL is the shortest TTL accepted. A hold counts only if the
	// store's reply arrives within TTL − TTL/20 of the request, and is
	// renewed every TTL/3: below this, a round trip to a server on another
	// machine, or a scheduling hiccup, is enough to lose every hold.
	MinTTL = 100 * time.Millisecond
	// DefaultReleaseTimeout bounds the release Unlock sends, unless the TTL
	// is shorter. The bound includes its wait for a renewal in flight. A
	// release that does not finish in time is left undone, and the lease
	// expires by itself after the TTL.
	DefaultReleaseTimeout = 2 * time.Second
	// DefaultTryTimeout bounds the one attempt of every try, unless the TTL
	// is shorter. The tries are TryLock, TryRLock and TryAcquire, and their
	// Context forms. An attempt the store does not answer in time fails,
	// whatever the store does meanwhile.
	DefaultTryTimeout = 2 * time.Second
)

// A MutexOption configures a Mutex (NewMutex): a KeyOption, a
// TryOption, a HoldOption, or WithNamespace. KeyOption's doc says which option fits
// which primitive.
type MutexOption interface{ applyMutex(*config) error }

// An RWMutexOption configures an RWMutex (NewRWMutex): a KeyOption, a
// TryOption, a HoldOption, or WithReadLinger.
type RWMutexOption interface{ applyRWMutex(*config) error }

// A SemaphoreOption configures a Semaphore (NewSemaphore): a KeyOption,
// a TryOption or a HoldOption.
type SemaphoreOption interface{ applySemaphore(*config) error }

// A OnceOption configures a Once (NewOnce): a KeyOption, or
// WithForgetAfter.
type OnceOption interface{ applyOnce(*config) error }

// A KeyOption fits every primitive. It is a MutexOption, an RWMutexOption,
// a SemaphoreOption and a OnceOption.
//
// A primitive takes options of its own type: NewMutex MutexOptions,
// NewRWMutex RWMutexOptions, NewSemaphore SemaphoreOptions, NewOnce
// OnceOptions. An option is of the types of the primitives it fits, and
// of those only, so that an option a primitive has no use for is a
// compile error:
//
//	option               Mutex  RWMutex  Semaphore  Once
//	WithLogger             x       x         x        x    (a KeyOption)
//	WithErrorHandler       x       x         x        x    (a KeyOption)
//	WithReleaseTimeout     x       x         x        x    (a KeyOption)
//	WithTryTimeout         x       x         x             (a TryOption)
//	WithProgressDeadline   x       x         x             (a HoldOption)
//	WithNamespace          x                               (a MutexOption)
//	WithReadLinger                 x                       (an RWMutexOption)
//	WithForgetAfter                                   x    (a OnceOption)
//
// A slice of options passed with "..." is of the primitive's type: a
// []MutexOption for NewMutex, which may hold KeyOptions, TryOptions and
// WithNamespace's. What is per lease (WithTTL, WithRenewInterval,
// WithClock) is the Client's (ClientOption). An option's bad value (a
// negative timeout, a nil logger) is an error the constructor returns,
// as is a nil option.
type KeyOption interface {
	MutexOption
	RWMutexOption
	SemaphoreOption
	OnceOption
}

// A TryOption fits the primitives that have Try methods. It is a
// MutexOption, an RWMutexOption and a SemaphoreOption. A Once never tries.
type TryOption interface {
	MutexOption
	RWMutexOption
	SemaphoreOption
}

// A HoldOption fits the primitives whose holds a progress deadline watches.
// See WithProgressDeadline. It is a MutexOption, an RWMutexOption and a
// SemaphoreOption. A Once's function has its own hold, which no deadline
// watches.
type HoldOption interface {
	MutexOption
	RWMutexOption
	SemaphoreOption
}

// The options' types, one per set of primitives an option fits; each sets
// a primitive's config, or says why its value is refused.
type (
	keyOption     func(*config) error // every primitive
	tryOption     func(*config) error // those that try
	holdOption    func(*config) error // those whose holds progress is reported on
	mutexOption   func(*config) error
	rwMutexOption func(*config) error
	onceOption    func(*config) error
)

func (o keyOption) applyMutex(c *config) error       { return apply(o, c) }
func (o keyOption) applyRWMutex(c *config) error     { return apply(o, c) }
func (o keyOption) applySemaphore(c *config) error   { return apply(o, c) }
func (o keyOption) applyOnce(c *config) error        { return apply(o, c) }
func (o tryOption) applyMutex(c *config) error       { return apply(o, c) }
func (o tryOption) applyRWMutex(c *config) error     { return apply(o, c) }
func (o tryOption) applySemaphore(c *config) error   { return apply(o, c) }
func (o holdOption) applyMutex(c *config) error      { return apply(o, c) }
func (o holdOption) applyRWMutex(c *config) error    { return apply(o, c) }
func (o holdOption) applySemaphore(c *config) error  { return apply(o, c) }
func (o mutexOption) applyMutex(c *config) error     { return apply(o, c) }
func (o rwMutexOption) applyRWMutex(c *config) error { return apply(o, c) }
func (o onceOption) applyOnce(c *config) error       { return apply(o, c) }

// errNilOption is a nil option's error: a nil interface, or an option
// type's nil function inside one, which is not nil as an interface.
var errNilOption = errors.New("dsync: nil option")

// apply sets c with the option o.
func apply(o func(*config) error, c *config) error {
	if o == nil {
		return errNilOption
	}
	return o(c)
}

// config is a primitive's settings: its options, and the lease
// parameters its Client gave it (ttl, clock), which no option sets.
type config struct {
	release     time.Duration // 0: min(DefaultReleaseTimeout, ttl)
	try         time.Duration // 0: min(DefaultTryTimeout, ttl)
	logger      *slog.Logger
	onError     func(error)
	namespace   string        // a Mutex's (WithNamespace)
	forgetAfter time.Duration // a Once's: 0 keeps its done record
	readLinger  time.Duration // an RWMutex's (WithReadLinger): 0 is off
	progress    time.Duration // WithProgressDeadline's: 0 is off

	ttl   time.Duration // the Client's (WithTTL)
	clock Clock         // the Client's (WithClock)
}

// newConfig applies opts, each with apply (the method of the primitive's
// option type), over the lease's parameters.
func newConfig[O any](opts []O, apply func(O, *config) error, l lease.Params) (config, error) {
	c := config{ttl: l.TTL, clock: l.Clock} // logger: the Client's, unless WithLogger (newCore)
	for _, opt := range opts {
		if any(opt) == nil {
			return config{}, errNilOption
		}
		if err := apply(opt, &c); err != nil {
			return config{}, err
		}
	}
	return c, nil
}

// releaseTimeout is the bound Unlock gives its release.
func (c *config) releaseTimeout() time.Duration {
	if c.release > 0 {
		return c.release
	}
	return min(DefaultReleaseTimeout, c.ttl)
}

// tryTimeout is the bound of a Try method's one attempt.
func (c *config) tryTimeout() time.Duration {
	if c.try > 0 {
		return c.try
	}
	return min(DefaultTryTimeout, c.ttl)
}

// WithReleaseTimeout bounds how long Unlock waits for its release. The
// bound includes a renewal in flight that the release must not race.
// Default: DefaultReleaseTimeout (2 s), or the TTL if shorter. A release
// that does not finish in time is reported and left undone: the lease
// expires by itself after the TTL, and other processes wait until then. It
// must be positive.
func WithReleaseTimeout(d time.Duration) KeyOption {
	return keyOption(func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("dsync: release timeout must be positive, got %v", d)
		}
		c.release = d
		return nil
	})
}

// WithTryTimeout bounds the one attempt of TryLock, TryRLock, TryAcquire
// and their Context forms. The attempt fails if the store has not answered
// within d. As the first attempt of a process, it includes the store's
// preparation. Default: DefaultTryTimeout (2 s), or the TTL if shorter. It
// must be positive.
func WithTryTimeout(d time.Duration) TryOption {
	return tryOption(func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("dsync: try timeout must be positive, got %v", d)
		}
		c.try = d
		return nil
	})
}

// WithLogger sets where the primitive's store errors and lost holds are
// logged. Store errors are logged at Warn: acquire attempts that Lock
// retries, failed renewals (the first of a run of failures; the others at
// Debug) and failed releases. A hold's loss is logged at Warn too, naming
// its cause (at Info when Close ended the hold). Default: the Client's
// logger (ClientWithLogger), which is slog.Default() unless set. Pass
// slog.New(slog.DiscardHandler) to silence them.
func WithLogger(l *slog.Logger) KeyOption {
	return keyOption(func(c *config) error {
		if l == nil {
			return errors.New("dsync: nil logger")
		}
		c.logger = l
		return nil
	})
}

// WithErrorHandler sets a function called with every store error the
// primitive handles itself. Those are the errors WithLogger logs; the
// function is called in addition to the logger. Default: none. It must not
// block.
func WithErrorHandler(f func(error)) KeyOption {
	return keyOption(func(c *config) error {
		if f == nil {
			return errors.New("dsync: nil error handler")
		}
		c.onError = f
		return nil
	})
}

// WithForgetAfter lets a Once forget that its function succeeded, d after
// the success. Once d and then the idle age of compaction have passed
// (ClientWithIdleAge; 30 minutes by default on MongoDB), a sweep deletes
// the done record. A Do after that runs the function again. Use it for keys
// made per slot of time ("report@2026-11-23T10:00"), whose records would
// otherwise pile up, with d longer than any Do of a slot can come late.
// Without it a done record is kept until the collections are emptied. d
// must be positive.
func WithForgetAfter(d time.Duration) OnceOption {
	return onceOption(func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("dsync: WithForgetAfter(%v): must be positive", d)
		}
		c.forgetAfter = d
		return nil
	})
}

// WithReadLinger turns on an RWMutex's read linger, which is off by
// default. After the last RUnlock of the RWMutex value, its read claim is
// kept until d has passed since the claim's first RUnlock. An RLock or
// TryRLock in that time then holds again with no request to the store (see
// RWMutex). The linger is not renewed by later RUnlocks: a reader that
// never stops still ends its claim every d, so a writer that cannot be
// heard waits d at most. It pays where one process churns RLock and RUnlock
// on a key: it makes one claim per linger instead of one per RLock. It
// applies only where the process hears that a writer waits (direct hints,
// ClientWithHints, or the store's live wake-up stream); elsewhere RUnlock
// releases as without it.
//
// Turning it on changes promises of sync.RWMutex's shape (RWMutex's doc
// lists them): another value's or process's TryLock, which never
// announces, fails for up to d after every read ended; a writer whose
// process takes no hints, behind a reader that hears only hints, waits
// up to d; the store (and dsync status) shows a reader while
// none holds; and successive read holds of the value share a fencing
// token.
//
// d must lie between 0 and the Client's renew interval
// (WithRenewInterval), which bounds what a claim kept costs (about one
// renewal of the lease more) and a writer's worst wait: NewRWMutex
// returns an error for a d outside, as for any option's bad input. 0 is
// the default: off, RUnlock always releases.
func WithReadLinger(d time.Duration) RWMutexOption {
	return rwMutexOption(func(c *config) error {
		if d < 0 {
			return fmt.Errorf("dsync: WithReadLinger(%v): must not be negative", d)
		}
		c.readLinger = d
		return nil
	})
}

// WithNamespace keeps the Mutex's key apart from plain keys. It claims the
// key in the namespace ns (stored as "dsync:NS/KEY"), which no plain key of
// the same name reaches. Keys outside a namespace may not begin with
// "dsync:".
//
// ns must not be empty, must not contain "/" (the namespace "a/b" would
// share its keys with the namespace "a": "dsync:a/b/KEY" is KEY "b/KEY"
// there), and must not be one of dsync's own: "rw", "sem" and "once"
// (the keys of RWMutexes, Semaphores and Onces), "election" (package
// leader's leases) and "sweep" (the Client's compaction lock), whose
// keys a Mutex in them would share. NewMutex returns the error, which
// names the namespace and why.
func WithNamespace(ns string) MutexOption {
	return mutexOption(func(c *config) error {
		switch {
		case ns == "":
			return errors.New("dsync: empty namespace")
		case strings.Contains(ns, "/"):
			err := fmt.Errorf("dsync: WithNamespace(%q): a namespace may not contain \"/\", which ends it in a stored key (dsync:NS/KEY)", ns)
			if outer, _, _ := strings.Cut(ns, "/"); outer != "" {
				err = fmt.Errorf("%w: its keys would be those of the namespace %q", err, outer)
			}
			return err
		case ownNamespaces[ns] != "":
			return fmt.Errorf("dsync: WithNamespace(%q): dsync keeps %s keys there: a Mutex in it would share them", ns, ownNamespaces[ns])
		}
		c.namespace = ns
		return nil
	})
}

// Package leader puts its leases in its namespace with the option
// clienthook.Elections, and reads the store's time with
// clienthook.StoreTime, which only dsync's own packages can reach.
func init() {
	clienthook.Elections = ownNamespace(electionNamespace)
	clienthook.StoreTime = func(c *Client) time.Time { return c.store.ServerTime().Earliest }
}

// ownNamespace is WithNamespace for dsync's own namespaces (see
// ownNamespaces): package leader's (clienthook.Elections) and the
// sweep's.
func ownNamespace(ns string) MutexOption {
	return mutexOption(func(c *config) error {
		if ownNamespaces[ns] == "" {
			return fmt.Errorf("dsync: %q is not a namespace of dsync's own", ns)
		}
		c.namespace = ns
		return nil
	})
}
