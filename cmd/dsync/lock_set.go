//go:build unix

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/lockset"
)

// dsync lock A B C -- CMD: several names held as one lock set
// (dsync/lockset), all or nothing, for the command. A set takes its keys
// in one global order, so two dsync lock naming overlapping sets in any
// orders never wait for each other in a cycle.
//
// The form is told apart from today's `dsync lock NAME CMD...` by a "--"
// after two or more names: every argument before it that is not a flag is
// a NAME. An argument list whose part before its first "--" does not
// parse as flags and names (a command's own flags, as in
// `dsync lock k sh -c x -- y`) is today's form.

// setForm returns the names and the command line of a lock-set command
// line, and ok: whether args are one. It parses their flags into fs, but
// first with a throwaway copy of the flags (lockFlagSet), so that a
// command line of today's form is left to be parsed afresh.
func setForm(g *globals, fs *flag.FlagSet, args []string) (names, argv []string, ok bool) {
	scratch, sf := *g, lockFlags{}
	if _, _, ok := scanNames(lockFlagSet(&scratch, &sf), args); !ok {
		return nil, nil, false
	}
	return scanNames(fs, args)
}

// scanNames parses args as flags and at least two names before a "--",
// and the command line after it.
func scanNames(fs *flag.FlagSet, args []string) (names, argv []string, ok bool) {
	end := slices.Index(args, "--")
	if end < 0 {
		return nil, nil, false
	}
	for rest := args[:end]; len(rest) > 0; {
		var dashdash bool
		var err error
		if rest, dashdash, err = scanFlags(fs, rest); err != nil || dashdash {
			return nil, nil, false
		}
		if len(rest) > 0 {
			names, rest = append(names, rest[0]), rest[1:]
		}
	}
	if len(names) < 2 {
		return nil, nil, false
	}
	return names, args[end+1:], true
}

// lockFlagSet is dsync lock's flags, parsed into g and f.
func lockFlagSet(g *globals, f *lockFlags) *flag.FlagSet {
	fs := newFlagSet("lock", g)
	f.runFlags.register(fs)
	fs.BoolVar(&f.try, "try", false, "")
	fs.Int64Var(&f.n, "n", 1, "")
	return fs
}

// checkNames refuses a name twice, and each name as checkName does.
func checkNames(names []string, n int64) error {
	if n > 1 {
		return fmt.Errorf("-n takes one NAME, got %d", len(names))
	}
	for i, name := range names {
		if err := checkName(name, maxLockName); err != nil {
			return fmt.Errorf("NAME %q: %w", name, err)
		}
		if j := slices.Index(names[:i], name); j >= 0 {
			return fmt.Errorf("NAME %q named twice (names %d and %d)", name, j+1, i+1)
		}
	}
	return nil
}

// setLock is a lock set of Mutexes, one a name, as dsync lock holds it.
type setLock struct {
	*lockset.Set
	names []string
}

// newSetLock makes the set of names on locks, and the environment its
// command gets besides the tokens: DSYNC_LOCKS, a name a line.
func newSetLock(locks *dsync.Client, names []string) (*setLock, []string, error) {
	ms := make([]lockset.Member, len(names))
	for i, name := range names {
		m, err := dsync.NewMutex(locks, name)
		if err != nil {
			return nil, nil, err
		}
		ms[i] = lockset.Mutex(m)
	}
	s, err := lockset.New(locks, ms)
	if err != nil {
		return nil, nil, err
	}
	return &setLock{Set: s, names: names}, []string{"DSYNC_LOCKS=" + strings.Join(names, "\n")}, nil
}

// Token is the first name's token; tokenText and tokenEnv give them all.
func (s *setLock) Token() uint64 {
	if ts := s.Tokens(); len(ts) > 0 {
		return ts[0]
	}
	return 0
}

// Key names the set's names, for messages.
func (s *setLock) Key() string { return strings.Join(s.names, ", ") }

// tokenText is mu's token, or a set's tokens space-separated in the order
// of its names.
func tokenText(mu lockable) string {
	s, ok := mu.(*setLock)
	if !ok {
		return strconv.FormatUint(mu.Token(), 10)
	}
	var b strings.Builder
	for i, t := range s.Tokens() {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatUint(t, 10))
	}
	return b.String()
}

// tokenEnv is the variable that gives the command its token: DSYNC_TOKEN,
// or a set's DSYNC_TOKENS.
func tokenEnv(mu lockable) string {
	if _, ok := mu.(*setLock); ok {
		return "DSYNC_TOKENS=" + tokenText(mu)
	}
	return "DSYNC_TOKEN=" + tokenText(mu)
}

// what names mu in a message: `lock "A" (token 5)`, or
// `locks "A", "B" (tokens 5 7)`.
func what(mu lockable) string {
	s, ok := mu.(*setLock)
	if !ok {
		return fmt.Sprintf("lock %q (token %d)", mu.Key(), mu.Token())
	}
	return fmt.Sprintf("locks %s (tokens %s)", quoted(s.names), tokenText(mu))
}

// quoted is names quoted, comma-separated.
func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// busyName is the name of the member that err (a Try's) says is held,
// for describeHolder; the first name if it does not say.
func busyName(mu lockable, err error, name string) string {
	var held *dsync.HeldError
	if _, ok := mu.(*setLock); ok && errors.As(err, &held) {
		return held.Key
	}
	return name
}

// lockNames names what dsync lock waited for in a message: `lock "A"`,
// or `locks "A", "B"`.
func lockNames(mu lockable, name string) string {
	if s, ok := mu.(*setLock); ok {
		return "locks " + quoted(s.names)
	}
	return fmt.Sprintf("lock %q", name)
}

// describeHolders says who holds name (describeHolder), or, for a set,
// who holds each of its names that is held by another process: `"B"
// held by HOST (pid N, token T)`, joined by "; ".
func describeHolders(ctx context.Context, b *dsync.Client, mu lockable, name string, n int64) string {
	s, ok := mu.(*setLock)
	if !ok {
		return describeHolder(ctx, b, name, n)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	host, _ := os.Hostname()
	var held []string
	for _, name := range s.names {
		info, ok, err := queueHead(ctx, b, name)
		switch {
		case err != nil:
			held = append(held, fmt.Sprintf("%q: its holder cannot be read: %s", name, oneLine(err)))
		case !ok:
		case info.Host == host && info.PID == os.Getpid():
			// The set's own member, whose release is on its way: a
			// Set that gave up its wait holds nothing.
		default:
			held = append(held, fmt.Sprintf("%q %s", name, formatHolder(info)))
		}
	}
	if len(held) == 0 {
		return "they are free now"
	}
	return strings.Join(held, "; ")
}

var _ lockable = (*setLock)(nil)
