package dsyncmongo

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/clockcheck"
	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// helloShifter is a TCP proxy in front of one server that moves the
// localTime of every reply by shift, as a mongos on a host with a wrong
// clock would report it. It rewrites the 8 bytes of a BSON date named
// localTime in place; nothing else changes. It assumes uncompressed
// messages, which the tests' clients send.
type helloShifter struct {
	ln        net.Listener
	target    string
	shift     time.Duration
	rewritten atomic.Int64
	wg        sync.WaitGroup
}

// localTimeElement is how a BSON date element named localTime begins.
var localTimeElement = []byte("\x09localTime\x00")

func newHelloShifter(t *testing.T, target string, shift time.Duration) *helloShifter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &helloShifter{ln: ln, target: target, shift: shift}
	p.wg.Go(p.accept)
	t.Cleanup(func() { _ = ln.Close(); p.wg.Wait() })
	return p
}

func (p *helloShifter) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		closeBoth := func() { _ = client.Close(); _ = server.Close() }
		p.wg.Go(func() { _, _ = io.Copy(server, client); closeBoth() })
		p.wg.Go(func() { p.replies(client, server); closeBoth() })
	}
}

// replies copies server's messages to client, one whole message at a
// time, shifting the localTime of each.
func (p *helloShifter) replies(client, server net.Conn) {
	var size [4]byte
	for {
		if _, err := io.ReadFull(server, size[:]); err != nil {
			return
		}
		msg := make([]byte, binary.LittleEndian.Uint32(size[:]))
		if len(msg) < 16 {
			return
		}
		copy(msg, size[:])
		if _, err := io.ReadFull(server, msg[4:]); err != nil {
			return
		}
		if i := bytes.Index(msg, localTimeElement); i >= 0 && i+len(localTimeElement)+8 <= len(msg) {
			at := msg[i+len(localTimeElement):]
			ms := int64(binary.LittleEndian.Uint64(at)) + p.shift.Milliseconds()
			binary.LittleEndian.PutUint64(at, uint64(ms))
			p.rewritten.Add(1)
		}
		if _, err := client.Write(msg); err != nil {
			return
		}
	}
}

// singleServer returns the address of the test server, skipping the test
// where that is a replica set (a direct connection through a proxy would
// reach one member, perhaps not the primary).
func singleServer(t *testing.T) string {
	t.Helper()
	srv := mongotest.Shared(t)
	c := mongotest.NewClient(t, srv.URI())
	hello, err := mongotest.Hello(testCtx(t, 30*time.Second), c)
	if err != nil {
		t.Fatal(err)
	}
	if hello["setName"] != nil || hello["msg"] == "isdbgrid" {
		t.Skip("the test server is not a single server")
	}
	opts := options.Client().ApplyURI(srv.URI())
	if len(opts.Hosts) != 1 {
		t.Skipf("the test server has %d hosts", len(opts.Hosts))
	}
	return opts.Hosts[0]
}

// TestServerTimeIsTheWritingServers: a process whose hello replies carry a
// clock an hour ahead (a router on a host with a wrong clock) still judges
// expiry in the time of the server that applies the writes: its server
// time is the true one, and it cannot take a lock whose holder's session
// is alive. Sampled from hello, the process would see the holder's
// session an hour past its expiry and take the lock beside it.
func TestServerTimeIsTheWritingServers(t *testing.T) {
	target := singleServer(t)
	proxy := newHelloShifter(t, target, time.Hour)
	ctx := testCtx(t, time.Minute)

	holderDB := mongotest.NewDatabase(t)
	holder := newBackend(t, holderDB)
	viaRouterClient := mongotest.NewClient(t, mongotest.Shared(t).URI(),
		options.Client().SetHosts([]string{proxy.ln.Addr().String()}).SetDirect(true))
	viaRouter := newBackend(t, viaRouterClient.Database(holderDB.Name()))

	hello, err := mongotest.Hello(ctx, viaRouterClient)
	if err != nil {
		t.Fatal(err)
	}
	lt, ok := hello["localTime"].(bson.DateTime)
	if !ok || time.Until(lt.Time()) < 59*time.Minute {
		t.Fatalf("hello through the proxy says localTime %v: the proxy does not shift it", hello["localTime"])
	}

	iv, err := viaRouter.ServerTime(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if now := time.Now(); !iv.Contains(now) {
		// The test server runs on this machine: its clock is this one.
		t.Errorf("server time through the proxy is [%v, %v], which does not hold the server's time %v", iv.Earliest, iv.Latest, now)
	}

	const ttl = 2 * time.Second
	h := claimed(t, ctx, holder, "k", "holder", open(t, ctx, holder, ttl))
	if err := holder.raw.Await(ctx, h); err != nil {
		t.Fatal(err)
	}
	var held *dsync.HeldError
	if _, err := viaRouter.raw.Claim(ctx, "k", "other", open(t, ctx, viaRouter, time.Minute), true); !errors.As(err, &held) || held.Token != h.Epoch {
		t.Fatalf("TryClaim through the proxy while the holder's session lives = %v, want a HeldError naming token %d", err, h.Epoch)
	}
	if proxy.rewritten.Load() == 0 {
		t.Fatal("the proxy rewrote no reply")
	}
}

// errNotPrimary is the error of a write sent to a member that has stepped
// down.
var errNotPrimary = mongo.CommandError{Code: 10107, Name: "NotWritablePrimary", Message: "not primary", Labels: []string{"RetryableWriteError"}}

// TestPrimaryChangeResamplesAtOnce: a write that fails because the server
// is no longer primary makes the backend sample the server's clock again
// at once (its periodic re-sample is a minute away); other failures do not.
func TestPrimaryChangeResamplesAtOnce(t *testing.T) {
	probes := make(chan struct{}, 16)
	cmd := &counter{onStart: func(e *event.CommandStartedEvent) {
		if e.CommandName == "findAndModify" {
			probes <- struct{}{}
		}
	}}
	var next atomic.Pointer[error]
	fault := func(op string) error {
		if op != "renew" {
			return nil
		}
		if err := next.Swap(nil); err != nil {
			return *err
		}
		return nil
	}
	db := mongotest.NewDatabase(t, cmd.monitor())
	b := newBackend(t, db, withFault(fault), withoutWakeups())
	ctx := testCtx(t, time.Minute)
	s := open(t, ctx, b, time.Minute)
	// The first measurement, done before OpenSession returned, may have
	// sent several.
	if len(probes) == 0 {
		t.Fatal("the first sample sent no findAndModify")
	}
	for len(probes) > 0 {
		<-probes
	}

	for _, tc := range []struct {
		err      error
		resample bool
	}{
		{errBadValue, false},
		{mongo.CommandError{Code: 13, Name: "Unauthorized", Message: "not authorized"}, false},
		{errNotPrimary, true},
		{mongo.CommandError{Code: 11602, Name: "InterruptedDueToReplStateChange", Message: "interrupted"}, true},
		{errNetwork, true},
	} {
		next.Store(&tc.err)
		_ = b.raw.RenewSession(ctx, s, time.Minute)
		wait := 300 * time.Millisecond // enough for a local round trip; a miss is caught by the later cases
		if tc.resample {
			wait = 10 * time.Second
		}
		select {
		case <-probes:
			if !tc.resample {
				t.Errorf("after %v: the server's clock was sampled again", tc.err)
			}
		case <-time.After(wait):
			if tc.resample {
				t.Errorf("after %v: no new sample within %v", tc.err, wait)
			}
		}
	}
}

// TestShardedCollectionsChecked: through a mongos, a lock collection
// sharded on a field that its documents' _ids do not determine, or a
// sessions collection sharded on anything but _id, is refused with
// ErrSharded, and so is a directory of keys sharded on anything but _id;
// the shard keys that keep _ids unique are accepted. The
// cluster's config.collections is stood in for by a test database.
func TestShardedCollectionsChecked(t *testing.T) {
	sharded := topologySharded
	for _, tc := range []struct {
		name string
		keys map[string]bson.D // collection → shard key
		ok   bool
	}{
		{"unsharded", nil, true},
		{"on key", map[string]bson.D{DefaultCollection: {{Key: "key", Value: 1}}}, true},
		{"on hashed key and _id", map[string]bson.D{
			DefaultCollection:                  {{Key: "key", Value: "hashed"}},
			DefaultCollection + sessionsSuffix: {{Key: "_id", Value: "hashed"}},
		}, true},
		{"on key and epoch", map[string]bson.D{DefaultCollection: {{Key: "key", Value: 1}, {Key: "epoch", Value: 1}}}, true},
		{"on owner", map[string]bson.D{DefaultCollection: {{Key: "owner", Value: 1}}}, false},
		{"on key and session", map[string]bson.D{DefaultCollection: {{Key: "key", Value: 1}, {Key: "session", Value: 1}}}, false},
		{"sessions on expiry", map[string]bson.D{DefaultCollection + sessionsSuffix: {{Key: "expiresAt", Value: 1}}}, false},
		{"keys on hashed _id", map[string]bson.D{DefaultCollection + keysSuffix: {{Key: "_id", Value: "hashed"}}}, true},
		{"keys on created", map[string]bson.D{DefaultCollection + keysSuffix: {{Key: "created", Value: 1}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := mongotest.NewDatabase(t)
			configDB := db.Client().Database(db.Name() + "_config")
			ctx := testCtx(t, 30*time.Second)
			t.Cleanup(func() { _ = configDB.Drop(context.Background()) })
			for coll, key := range tc.keys {
				if _, err := configDB.Collection("collections").InsertOne(ctx, bson.D{{Key: "_id", Value: db.Name() + "." + coll}, {Key: "key", Value: key}}); err != nil {
					t.Fatal(err)
				}
			}
			// A dropped collection's entry (kept before MongoDB 5.0) counts for nothing.
			if _, err := configDB.Collection("collections").InsertOne(ctx, bson.D{{Key: "_id", Value: db.Name() + ".dropped"}, {Key: "key", Value: bson.D{{Key: "owner", Value: 1}}}, {Key: "dropped", Value: true}}); err != nil {
				t.Fatal(err)
			}
			b := newBackend(t, db, func(c *config) error { c.tests().topology, c.tests().configDB = &sharded, configDB.Name(); return nil })
			_, err := b.raw.OpenSession(ctx, time.Minute)
			switch {
			case tc.ok && err != nil:
				t.Fatalf("OpenSession = %v, want it accepted", err)
			case !tc.ok && !errors.Is(err, ErrSharded):
				t.Fatalf("OpenSession = %v, want ErrSharded", err)
			case !tc.ok && !strings.Contains(err.Error(), "sharded on"):
				t.Errorf("the error does not name the shard key: %v", err)
			}
			if !tc.ok {
				t.Logf("refused: %v", err)
			}
		})
	}
}

// TestShardKeyUnknownIsNotErrSharded: when the shard keys cannot be read
// at all (neither config.collections nor collStats answers), the call
// fails, but not with ErrSharded, and the next call asks again.
func TestShardKeyUnknownIsNotErrSharded(t *testing.T) {
	sharded := topologySharded
	fault, calls := faults("shard key", errNotWanted)
	db := mongotest.NewDatabase(t)
	b := newBackend(t, db, withFault(fault), func(c *config) error {
		c.tests().topology, c.tests().configDB = &sharded, db.Name()+"_config"
		return nil
	})
	ctx := testCtx(t, 30*time.Second)
	_, err := b.raw.OpenSession(ctx, time.Minute)
	if err == nil || errors.Is(err, ErrSharded) || !sameCommandError(err, errNotWanted) {
		t.Fatalf("OpenSession with unreadable shard keys = %v, want the server's error, not ErrSharded", err)
	}
	if _, err := b.raw.OpenSession(ctx, time.Minute); err != nil {
		t.Fatalf("OpenSession once the shard keys can be read = %v", err)
	}
	if n := calls(); n < 2 {
		t.Errorf("the shard keys were read %d times, want again after the failure", n)
	}
}

// TestProbeRetriesTransient: a server-time sample that fails transiently
// (FerretDB busy while processes start at once) is tried again within the
// sample, so the first call does not fail; other failures are not.
func TestProbeRetriesTransient(t *testing.T) {
	for _, tc := range []struct {
		name      string
		errs      []error
		wantErr   error
		wantCalls int
	}{
		// Four failures, the retry, then the other samples of the first
		// measurement.
		{"busy", []error{errBusy, errBusy, errBusy, errBusy}, nil, 4 + clockcheck.DefaultSamples},
		{"busy throughout", []error{errBusy, errBusy, errBusy, errBusy, errBusy}, errBusy, probeAttempts},
		{"not transient", []error{errBadValue}, errBadValue, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fault, calls := faults("probe", tc.errs...)
			b := newBackend(t, mongotest.NewDatabase(t), withFault(fault))
			_, err := b.raw.OpenSession(testCtx(t, 30*time.Second), time.Minute)
			checkAttempts(t, "OpenSession (server-time probes)", err, tc.wantErr, calls(), tc.wantCalls)
		})
	}
}

// TestMemberSkewWidensServerTime: on a replica set, server-time intervals
// are wider by the member skew on each side (100 ms unless set); on a
// single server by what is set only.
func TestMemberSkewWidensServerTime(t *testing.T) {
	if _, err := newTestClient(mongotest.NewDatabase(t), WithMemberSkew(-time.Millisecond)); err == nil {
		t.Error("WithMemberSkew(-1ms) accepted")
	}
	single, replicas := topologySingle, topologyReplicas
	for _, tc := range []struct {
		name    string
		topo    *topology
		opts    []any
		atLeast time.Duration
		below   time.Duration
	}{
		{"single server", &single, nil, 0, DefaultMemberSkew},
		{"replica set", &replicas, nil, DefaultMemberSkew, time.Hour},
		{"replica set, set", &replicas, []any{WithMemberSkew(time.Second)}, time.Second, time.Hour},
		{"single server, set", &single, []any{WithMemberSkew(time.Second)}, time.Second, time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := append([]any{Option(func(c *config) error { c.tests().topology = tc.topo; return nil })}, tc.opts...)
			b := newBackend(t, mongotest.NewDatabase(t), opts...)
			iv, err := b.ServerTime(testCtx(t, 30*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			half := iv.Latest.Sub(iv.Earliest) / 2
			if half < tc.atLeast || half >= tc.below {
				t.Errorf("server time ± %v, want at least %v and below %v", half, tc.atLeast, tc.below)
			}
		})
	}
}

// TestTopologyOfTheTestServer: the test server is classified from its
// hello reply (a replica set names itself; a mongos says isdbgrid).
func TestTopologyOfTheTestServer(t *testing.T) {
	db := mongotest.NewDatabase(t)
	ctx := testCtx(t, 30*time.Second)
	hello, err := mongotest.Hello(ctx, db.Client())
	if err != nil {
		t.Fatal(err)
	}
	want := topologySingle
	switch {
	case hello["msg"] == "isdbgrid":
		want = topologySharded
	case hello["setName"] != nil:
		want = topologyReplicas
	}
	b := newBackend(t, db)
	if got, err := b.s.platform.detectTopology(ctx); err != nil || got != want {
		t.Errorf("detectTopology = %v, %v; want %v", got, err, want)
	}
}

// withEstimator adds options to the server-time estimator.
func withEstimator(opts ...clockcheck.Option) Option {
	return func(c *config) error { c.estimator = append(c.estimator, opts...); return nil }
}

// TestRenewalSamplesServerTime: each renewal reads the server's time back
// (findAndModify with $currentDate), so on one server the estimator sends
// no samples of its own while renewals come at least once per re-sample
// interval, and samples again once they stop. With a member skew (several
// servers) it keeps sampling, to follow a failover.
//
// On a loaded machine a renewal can take longer than the interval, and
// the estimator then rightly sends a probe of its own: a round in which
// renewals came half an interval apart or more proves nothing, and is
// measured again, up to renewalRounds rounds.
func TestRenewalSamplesServerTime(t *testing.T) {
	t.Parallel()
	const (
		interval      = 400 * time.Millisecond
		renewalRounds = 5
	)
	db := mongotest.NewDatabase(t)
	fault, probes := faults("probe")
	b := newBackend(t, db, withFault(fault), withoutWakeups(), withEstimator(clockcheck.WithInterval(interval)))
	ctx := testCtx(t, time.Minute)
	s := open(t, ctx, b, time.Minute)
	oneServer := b.s.platform.memberSkew(b.s.platform.topo) == 0
	// renewals renews 12 times, 100 ms apart (1.2 s: three intervals),
	// and returns the probes sent meanwhile and the longest time the
	// estimator went without a renewal's sample: from a renewal's sending
	// (its sample's time) to the reply of the next.
	renewals := func() (during int, apart time.Duration) {
		first := probes()
		prev := time.Now()
		for range 12 {
			sent := time.Now()
			if err := b.raw.RenewSession(ctx, s, time.Minute); err != nil {
				t.Fatal(err)
			}
			apart = max(apart, time.Since(prev))
			prev = sent
			time.Sleep(100 * time.Millisecond)
		}
		during = probes() - first
		return during, max(apart, time.Since(prev))
	}
	for round := 1; ; round++ {
		during, apart := renewals()
		t.Logf("round %d: %d server-time probes during 1.2 s of renewals at most %v apart (one server: %v)", round, during, apart, oneServer)
		if !oneServer && during == 0 {
			t.Errorf("no probes while renewals sampled the server's time with a member skew; want some")
		}
		if !oneServer || during == 0 {
			break
		}
		if apart < interval/2 {
			t.Errorf("%d probes while renewals sampled the server's time at most %v apart; want none on one server", during, apart)
			break
		}
		if round == renewalRounds {
			t.Skipf("renewals came %v apart or more in each of %d rounds (a loaded machine): the estimator rightly probed, and the test cannot tell", interval/2, round)
		}
	}
	before := probes()
	time.Sleep(3 * interval)
	after := probes() - before
	t.Logf("server-time probes: %d in the %v without renewals", after, 3*interval)
	if after == 0 {
		t.Errorf("no probes in %v without renewals", 3*interval)
	}
}
