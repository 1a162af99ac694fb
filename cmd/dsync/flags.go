//go:build unix

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	leadermongo "github.com/go-dsync/dsync/leader/mongo"
	"github.com/go-dsync/dsync/leader/operator"
)

// Defaults of the global flags.
const (
	defaultDB         = dsyncmongo.DefaultDatabase
	defaultCollection = dsyncmongo.DefaultCollection
	defaultElections  = leadermongo.LegacyCollection
	defaultMembers    = leadermongo.DefaultMembersCollection
	defaultTimeout    = 10 * time.Second
)

// globals are the flags every command accepts, before or after its name.
type globals struct {
	uri        string
	db         string // --db's value, or defaultDB; see database
	dbSet      bool   // --db was given
	collection string // locks, and the leases of elections
	elections  string // where older releases kept election leases (see memberStore)
	members    string
	timeout    time.Duration
	verbose    bool
	wakeups    bool
	// hints: where to listen for direct hints ("": the library's
	// default; hintsOff: none), and the address to advertise (see
	// dsync.ClientWithHints).
	hints, hintsAdvertise string
	// outageGrace: --outage-grace's value, if outageGraceSet (else the
	// library's default, dsync.ClientWithOutageGrace).
	outageGrace    time.Duration
	outageGraceSet bool

	defaulted bool // the defaults above are set

	// Set by connect: the connection string in use, and the watch of
	// its servers' heartbeats (whileReachable).
	connURI string
	watch   *dialWatch
}

// newFlagSet returns a flag set for cmd with the global flags registered.
// Registering them again in a command's set keeps the values parsed
// before the command name: they become that set's defaults.
func newFlagSet(cmd string, g *globals) *flag.FlagSet {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are printed as one line by the caller
	fs.Usage = func() {}
	if !g.defaulted {
		g.db, g.collection, g.elections, g.members, g.timeout = defaultDB, defaultCollection, defaultElections, defaultMembers, defaultTimeout
		g.wakeups = true // dsyncmongo's default
		g.defaulted = true
	}
	fs.StringVar(&g.uri, "uri", g.uri, "MongoDB connection string (default $MONGODB_URI)")
	fs.Var(dbFlag{g}, "db", "database (default: the connection string's, else "+defaultDB+")")
	fs.StringVar(&g.collection, "collection", g.collection, "lock collection")
	fs.StringVar(&g.elections, "elections", g.elections, "where older releases kept election leases")
	fs.StringVar(&g.members, "members", g.members, "election member collection")
	fs.DurationVar(&g.timeout, "timeout", g.timeout, "how long to wait for the server to answer")
	fs.BoolVar(&g.verbose, "v", g.verbose, "say what dsync is doing")
	fs.BoolVar(&g.wakeups, "wakeups", g.wakeups, "wake waiting processes by events (default); --wakeups=false polls")
	fs.Var(outageGraceFlag{g}, "outage-grace", "how long an outage of the whole store holds ride through (default dsync's); 0: none")
	fs.StringVar(&g.hints, "hints", g.hints, "listen for direct wake-up hints on this UDP host:port, or off (default: 127.0.0.1:0 where the server is reached over loopback, else off)")
	fs.StringVar(&g.hintsAdvertise, "hints-advertise", g.hintsAdvertise, "the host:port other processes send hints to (default: --hints's)")
	return fs
}

// parseArgs parses the flags of a command, which may come before, between
// and after its positional arguments, and returns the positional
// arguments. A "--" ends the flags: a name that starts with '-' is given
// after it. When the command takes a command line to run (withCmd), the
// grammar is
//
//	[flags] NAME [flags] [--] [CMD [ARG...]]
//	[flags] -- NAME [--] [CMD [ARG...]]
//
// and the command line, empty when there is none, is everything after
// the "--" that follows NAME's flags or, without one, from the first
// argument after NAME that is not a flag on, verbatim. A usage message has
// already been printed when err is not nil; code is the exit status then.
func parseArgs(fs *flag.FlagSet, usage string, args []string, withCmd bool) (pos, cmdline []string, code int, err error) {
	fail := func(err error) ([]string, []string, int, error) {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(os.Stdout, usage)
			return nil, nil, exitOK, err
		}
		return nil, nil, usageError(fs.Name(), err), err
	}
	if !withCmd {
		var err error
		for len(args) > 0 {
			var dashdash bool
			if args, dashdash, err = scanFlags(fs, args); err != nil {
				return fail(err)
			}
			if dashdash {
				return append(pos, args...), nil, 0, nil
			}
			if len(args) > 0 {
				pos, args = append(pos, args[0]), args[1:]
			}
		}
		return pos, nil, 0, nil
	}
	rest, dashdash, err := scanFlags(fs, args)
	if err != nil {
		return fail(err)
	}
	if len(rest) == 0 {
		return nil, nil, 0, nil
	}
	pos, rest = rest[:1], rest[1:]
	if dashdash { // -- NAME [--] CMD
		if len(rest) > 0 && rest[0] == "--" {
			rest = rest[1:]
		}
		return pos, rest, 0, nil
	}
	if rest, _, err = scanFlags(fs, rest); err != nil {
		return fail(err)
	}
	return pos, rest, 0, nil
}

// scanFlags parses the flags at the start of args and returns what
// follows them: from the first argument that is not a flag, or after a
// "--" (dashdash).
func scanFlags(fs *flag.FlagSet, args []string) (rest []string, dashdash bool, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return args[i+1:], true, nil
		case len(a) < 2 || a[0] != '-':
			return args[i:], false, nil
		}
		n := 1
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if f := fs.Lookup(name); f != nil && !hasValue && !isBoolFlag(f) && i+1 < len(args) {
			n = 2
		}
		if err := fs.Parse(args[i : i+n]); err != nil {
			return nil, false, flagError(err, name, a)
		}
		i += n - 1
	}
	return nil, false, nil
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// flagError rewrites the flag package's error about flag name, typed as
// arg, with the flag as the user spelled it.
func flagError(err error, name, arg string) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	spelled, _, _ := strings.Cut(arg, "=")
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "flag provided but not defined"):
		return fmt.Errorf("unknown flag %s", spelled)
	case strings.HasPrefix(msg, "flag needs an argument"):
		return fmt.Errorf("flag %s needs a value", spelled)
	}
	return errors.New(strings.Replace(msg, "flag -"+name, spelled, 1))
}

// Name limits. A lock's name is its key, of at most dsyncmongo.MaxKeyLen
// bytes; an election's lease has the key operator.LockKey(NAME),
// "dsync:election/" followed by the name (in the lock collection, in a
// namespace no lock name reaches), so its names are shorter by that
// prefix.
var (
	maxLockName     = dsyncmongo.MaxKeyLen
	maxElectionName = dsyncmongo.MaxKeyLen - len(operator.LockKey(""))
)

// checkName validates a lock or election name before any I/O, with the
// limit for its kind; dsyncmongo would refuse it on every attempt.
func checkName(name string, limit int) error {
	switch {
	case name == "":
		return errors.New("empty name")
	case len(name) > limit:
		return fmt.Errorf("name of %d bytes; the limit is %d", len(name), limit)
	case !utf8.ValidString(name):
		return errors.New("name is not valid UTF-8")
	}
	return nil
}

// errNoServer says how to get a server: one line, since it is printed as
// an error.
var errNoServer = errors.New("no server: set MONGODB_URI or --uri; for a local one, run 'dsync server' " +
	"and export MONGODB_URI=mongodb://127.0.0.1:27017/")

// A usageErr is a mistake in what the user gave (a flag's value, the
// connection string), found before any I/O: exit status 2, as for a
// missing server (errNoServer).
type usageErr struct{ error }

func (e usageErr) Unwrap() error { return e.error }

// isUsage reports whether err is the user's mistake rather than the
// server's or the network's.
func isUsage(err error) bool {
	var u usageErr
	return errors.Is(err, errNoServer) || errors.As(err, &u)
}

// resolveURI returns --uri, else $MONGODB_URI.
func (g *globals) resolveURI() (string, error) {
	if g.uri != "" {
		return g.uri, nil
	}
	if uri := os.Getenv("MONGODB_URI"); uri != "" {
		return uri, nil
	}
	return "", errNoServer
}

// redact hides the secrets of a connection string: the password, and the
// values of the options that carry credentials.
func redact(uri string) string {
	prefix, _, suffix, ok := splitSecret(uri)
	if !ok {
		return redactOptions(uri)
	}
	return prefix + "***" + redactOptions(suffix)
}

// splitSecret cuts the password out of uri. It works on what the driver
// would parse as well as on strings the driver rejects. The driver ends
// the user information at the first '@' after the scheme; a user who did
// not percent-encode a reserved character in the password may have meant
// the last one. So everything after the first ':' of the user information
// (or after the first '@', when the user name has no ':') up to the last
// '@' is the secret: never less than the driver's password, more when an
// option's value holds an '@'. A string without a scheme is read the same
// way.
func splitSecret(uri string) (prefix, secret, suffix string, ok bool) {
	scheme, rest, hasScheme := strings.Cut(uri, "://")
	if hasScheme {
		prefix = scheme + "://"
	} else {
		rest = uri
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return "", "", "", false
	}
	if colon := strings.Index(rest[:at], ":"); colon >= 0 {
		return prefix + rest[:colon+1], rest[colon+1 : at], rest[at:], true
	}
	if first := strings.Index(rest, "@"); first != at {
		return prefix + rest[:first+1], rest[first+1 : at], rest[at:], true
	}
	return "", "", "", false // a user name, no password
}

// secretOptions are the connection string options whose values are
// credentials: key file passwords, and authMechanismProperties, which may
// hold an AWS session token.
var secretOptions = regexp.MustCompile(`(?i)([?&;](?:tlsCertificateKeyFilePassword|sslClientCertificateKeyPassword|authMechanismProperties)=)([^&;]*)`)

func redactOptions(s string) string { return secretOptions.ReplaceAllString(s, "${1}***") }

// uriError is an error the driver gave parsing uri, with nothing of the
// secrets in it: the driver quotes an invalid escape sequence, and a
// misplaced reserved character can leave a piece of the password where
// the host or the database is expected.
func uriError(uri string, err error) error {
	msg := err.Error()
	if strings.Contains(msg, "password") {
		msg = "error parsing uri: invalid password: percent-encode the characters : / ? # [ ] @ % in it"
	}
	return fmt.Errorf("--uri %s: %s", redact(uri), scrub(uri, msg))
}

// scrub replaces whatever of uri's secrets msg holds by "***".
func scrub(uri, msg string) string {
	for _, s := range uriSecrets(uri) {
		msg = strings.ReplaceAll(msg, s, "***")
	}
	return msg
}

// uriSecrets are the pieces of uri that redact hides, whole and cut at
// the reserved characters, raw and unescaped, longest first. Pieces
// shorter than 3 bytes are left out: they would blot out ordinary words.
func uriSecrets(uri string) []string {
	var hidden []string
	_, secret, suffix, ok := splitSecret(uri)
	if ok {
		hidden = append(hidden, secret)
	} else {
		suffix = uri
	}
	for _, m := range secretOptions.FindAllStringSubmatch(suffix, -1) {
		hidden = append(hidden, m[2])
	}
	var out []string
	add := func(p string) {
		if len(p) >= 3 {
			out = append(out, p)
			if u, err := url.PathUnescape(p); err == nil && u != p {
				out = append(out, u)
			}
		}
	}
	for _, h := range hidden {
		add(h)
		for _, p := range strings.FieldsFunc(h, func(r rune) bool { return strings.ContainsRune(":/?#[]@%", r) }) {
			add(p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}
