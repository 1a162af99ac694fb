//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/address"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/auth"
)

// connect connects to the server and pings it within g.timeout, so that a
// wrong URI or a server that is down is one clear error before anything
// else happens. It does not wait out the timeout when the answer is
// already known: once every server of the connection string has failed
// to answer (refused, no such host, a TLS error), it fails with the
// cause, and an authentication failure is reported as such.
func (g *globals) connect(ctx context.Context) (*mongo.Client, *mongo.Database, error) {
	uri, err := g.resolveURI()
	if err != nil {
		return nil, nil, err
	}
	switch {
	case g.timeout <= 0:
		return nil, nil, fmt.Errorf("--timeout must be positive, got %v", g.timeout)
	case g.dbSet && g.db == "":
		return nil, nil, usageErr{errors.New("--db must not be empty")}
	}
	// From here on g.db is the database in use, which the commands name
	// in what they print.
	g.db = g.database(uri)
	if err := g.checkDatabase(); err != nil {
		return nil, nil, err
	}
	opts, err := clientOptions(uri)
	if err != nil {
		return nil, nil, err
	}
	w := newDialWatch(opts.Hosts)
	opts.SetAppName("dsync").SetServerSelectionTimeout(g.timeout).SetServerMonitor(w.monitor())
	client, err := mongo.Connect(opts)
	if err != nil {
		return nil, nil, uriError(uri, err)
	}
	first := w.round()
	defer first.end()
	pctx, cancel := context.WithTimeoutCause(ctx, g.timeout, errNoAnswer)
	defer cancel()
	pctx, cancelDown := context.WithCancelCause(pctx)
	defer cancelDown(nil)
	go func() {
		select {
		case <-first.down:
			cancelDown(errAllDown)
		case <-pctx.Done():
		}
	}()
	err = client.Ping(pctx, nil)
	if err == nil {
		if g.verbose {
			fmt.Fprintf(os.Stderr, "dsync: connected to %s: database %q, lock collection %q\n", redact(uri), g.db, g.collection)
		}
		g.watch, g.connURI = w, uri
		return client, client.Database(g.db), nil
	}
	// Read the cause before Disconnect: it cancels the heartbeats in
	// flight, whose failures say no more than "operation was canceled".
	f := failedPing{uri: uri, timeout: g.timeout, err: err, cause: context.Cause(pctx)}
	f.why, f.answered = first.failure()
	if opts.Auth != nil {
		f.user = opts.Auth.Username
	}
	disconnect(client)
	if ctx.Err() != nil {
		return nil, nil, context.Cause(ctx)
	}
	return nil, nil, f.error()
}

// clientOptions are the driver's options for uri, checked.
func clientOptions(uri string) (*options.ClientOptions, error) {
	opts := options.Client().ApplyURI(uri)
	if err := opts.Validate(); err != nil {
		var dns *net.DNSError
		if errors.As(err, &dns) { // mongodb+srv:// looks its servers up
			return nil, fmt.Errorf("cannot reach %s: %s", redact(uri), describeDialError(dns.Name, dns))
		}
		return nil, uriError(uri, err)
	}
	return opts, nil
}

// A failedPing is what is known of a ping that failed.
type failedPing struct {
	uri     string
	user    string // who authenticated, if anyone
	timeout time.Duration
	err     error  // the ping's
	cause   error  // its context's: errAllDown, errNoAnswer or none
	why     string // why the servers failed to answer, from the heartbeats
	// answered: a server answered a heartbeat.
	answered bool
}

// error says why the ping failed, in one line without secrets.
func (f failedPing) error() error {
	where := redact(f.uri)
	var authErr *auth.Error
	switch {
	case errors.As(f.err, &authErr):
		who := ""
		if f.user != "" {
			who = " as " + f.user
		}
		return fmt.Errorf("authentication failed at %s%s: %s", where, who, scrub(f.uri, tidy(authErr.Error())))
	case errors.Is(f.cause, errAllDown):
		return fmt.Errorf("cannot reach %s: %s", where, scrub(f.uri, f.why))
	case errors.Is(f.cause, errNoAnswer) && f.answered:
		return fmt.Errorf("cannot reach %s: no usable server within %v (--timeout): %s", where, f.timeout, scrub(f.uri, tidy(f.err.Error())))
	case errors.Is(f.cause, errNoAnswer) && f.why != "":
		return fmt.Errorf("cannot reach %s within %v (--timeout): %s", where, f.timeout, scrub(f.uri, f.why))
	case errors.Is(f.cause, errNoAnswer):
		return fmt.Errorf("cannot reach %s: no answer within %v (--timeout)", where, f.timeout)
	}
	return fmt.Errorf("cannot reach %s: %s", where, scrub(f.uri, tidy(f.err.Error())))
}

var (
	errNoAnswer = errors.New("no answer within the timeout")
	errAllDown  = errors.New("every server failed to answer")
)

// unreachableError is the cause whileReachable gives: a failed ping's
// error, matching errAllDown.
type unreachableError struct{ err error }

func (e unreachableError) Error() string { return e.err.Error() }
func (e unreachableError) Unwrap() error { return errAllDown }

// A dialWatch follows the driver's heartbeats to the servers of a
// connection string for the life of a client. Each round of it (round)
// closes its down channel once every one of those servers has failed a
// heartbeat since the round began, unless one answered first: then the
// answer is known before any timeout (refused, no such host, a TLS
// error), and the round says why.
type dialWatch struct {
	hosts []string // canonical addresses of the connection string

	mu       sync.Mutex
	rounds   map[*dialRound]bool
	answered bool // a server answered a heartbeat, ever
}

// A dialRound is one wait of a dialWatch: a ping, or one request of the
// status page.
type dialRound struct {
	w    *dialWatch
	down chan struct{}
	// Guarded by w.mu.
	pending  map[string]bool // addresses not yet failed
	failures []string        // why each failed, in order
	answered bool            // a server answered a heartbeat
	closed   bool
}

func newDialWatch(hosts []string) *dialWatch {
	w := &dialWatch{rounds: map[*dialRound]bool{}}
	for _, h := range hosts {
		w.hosts = append(w.hosts, canonical(h))
	}
	return w
}

// round begins a round; end it with end.
func (w *dialWatch) round() *dialRound {
	r := &dialRound{w: w, down: make(chan struct{}), pending: map[string]bool{}}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, h := range w.hosts {
		r.pending[h] = true
	}
	w.rounds[r] = true
	return r
}

// end ends r: it hears of no more heartbeats.
func (r *dialRound) end() {
	r.w.mu.Lock()
	delete(r.w.rounds, r)
	r.w.mu.Unlock()
}

func (w *dialWatch) monitor() *event.ServerMonitor {
	return &event.ServerMonitor{
		ServerHeartbeatFailed: func(e *event.ServerHeartbeatFailedEvent) {
			if errors.Is(e.Failure, context.Canceled) {
				return // Disconnect, not the server
			}
			addr, _, _ := strings.Cut(e.ConnectionID, "[")
			addr = canonical(addr)
			w.mu.Lock()
			defer w.mu.Unlock()
			for r := range w.rounds {
				if !r.pending[addr] {
					continue // failed before, or found later
				}
				delete(r.pending, addr)
				why := describeDialError(addr, e.Failure)
				if w.answered && errors.Is(e.Failure, io.EOF) {
					// Not a TLS mismatch: the server answered before.
					why = addr + " closed the connection (is the server running?)"
				}
				r.failures = append(r.failures, why)
				if len(r.pending) == 0 && !r.answered && !r.closed {
					r.closed = true
					close(r.down)
				}
			}
		},
		ServerHeartbeatSucceeded: func(e *event.ServerHeartbeatSucceededEvent) {
			// A server answers: the driver's own timeout decides from
			// now on (it may be a secondary, or auth may fail).
			w.mu.Lock()
			w.answered = true
			for r := range w.rounds {
				r.answered = true
			}
			w.mu.Unlock()
		},
	}
}

// failure says why the servers could not be reached, "" when none failed.
func (r *dialRound) failure() (why string, answered bool) {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	return strings.Join(r.failures, "; "), r.answered
}

// whileReachable returns a context that ends, with the cause a failed
// ping would give ("cannot reach ...: connection refused by ... (is the
// server running?)"), once every server of the connection string has
// failed a heartbeat since the call and none answered; stop releases it.
// Without it, a call on a client whose server went away waits out the
// driver's server selection timeout, and ends with a bare deadline.
func (g *globals) whileReachable(ctx context.Context) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	if g.watch == nil {
		return ctx, func() { cancel(nil) }
	}
	r := g.watch.round()
	done, quit := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-r.down:
			why, _ := r.failure()
			cancel(unreachableError{failedPing{uri: g.connURI, err: errAllDown, cause: errAllDown, why: why}.error()})
		case <-ctx.Done():
		case <-quit:
		}
	}()
	return ctx, func() {
		close(quit)
		<-done
		r.end()
		cancel(nil)
	}
}

// canonical is a server address as the driver names it: lower case, with
// a port.
func canonical(addr string) string { return address.Address(addr).Canonicalize().String() }

// describeDialError says in a few words why the server at addr could not
// be reached.
func describeDialError(addr string, err error) string {
	var dns *net.DNSError
	var op *net.OpError
	switch {
	case errors.As(err, &dns) && dns.IsNotFound:
		return fmt.Sprintf("no such host %q", dns.Name)
	case errors.As(err, &dns):
		return fmt.Sprintf("looking up %q: %s", dns.Name, dns.Err)
	case errors.Is(err, syscall.ECONNREFUSED) && errors.As(err, &op) && op.Addr != nil:
		return fmt.Sprintf("connection refused by %s (is the server running?)", op.Addr)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Sprintf("connection refused by %s (is the server running?)", addr)
	case errors.Is(err, io.EOF):
		return fmt.Sprintf("%s closed the connection during the handshake (TLS on one side only?)", addr)
	}
	return addr + ": " + tidy(err.Error())
}

// disconnect closes the client's connections. Ending its sessions on the
// server is best effort, and must not hold up an exit when the server has
// gone away.
func disconnect(c *mongo.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = c.Disconnect(ctx)
}

// tidy flattens an error message to one line and drops what the driver
// and the libraries repeat: a part of a "a: b: c" chain that came before
// ("a: b: a: c" becomes "a: b: c"), and the topology description a
// server selection error appends, which repeats the last heartbeat's
// error.
func tidy(msg string) string {
	msg = strings.Join(strings.Fields(msg), " ")
	msg = topology.ReplaceAllString(msg, "")
	var kept []string
	seen := map[string]bool{}
	for _, p := range strings.Split(msg, ": ") {
		if !seen[p] {
			seen[p] = true
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, ": ")
}

// topology matches the description that ends the driver's server
// selection errors.
var topology = regexp.MustCompile(`, current topology: \{.*\}`)
