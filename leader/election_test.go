package leader_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/leader/leadertest"
)

var _ interface {
	Campaign(context.Context) (context.Context, error)
} = (*leader.Election)(nil)

const ttl = 3 * time.Second

var quiet = leader.WithLogger(slog.New(slog.DiscardHandler))

// A proc is one candidate's process: its Client (with the TTL ttl) and
// the member store it reports to.
type proc struct {
	c       *dsync.Client
	members leader.MemberStore
	store   *memory.Process // the process's view of the store; nil for a cut
}

// cut is a proc that can be severed: its renewals fail while renewDown is
// set, its heartbeats while heartbeatDown is.
type cut struct {
	*proc
	renewDown     *atomic.Bool
	heartbeatDown atomic.Bool
}

var errCut = errors.New("candidate cut off from the store")

// A world is one store, and one member status, for candidates in
// processes of their own.
type world struct {
	store   *memory.Store
	members *leadertest.MemoryMembers
}

func newWorld() *world { return &world{store: memory.New(), members: leadertest.NewMemoryMembers()} }

// process returns a new process in w.
func (w *world) process(t *testing.T, opts ...dsync.ClientOption) *proc {
	p := w.store.Process()
	return &proc{c: newClient(t, p, opts...), members: w.members, store: p}
}

// cut returns a new process in w that can be cut off.
func (w *world) cut(t *testing.T) *cut {
	s := &cutStore{Store: w.store}
	c := &cut{renewDown: &s.renewDown}
	c.proc = &proc{c: newClient(t, s), members: &cutMembers{MemberStore: w.members, down: &c.heartbeatDown}}
	return c
}

// newCut returns a cut candidate process in a world of its own.
func newCut(t *testing.T) *cut { return newWorld().cut(t) }

// newProc returns a process in a world of its own.
func newProc(t *testing.T, opts ...dsync.ClientOption) *proc { return newWorld().process(t, opts...) }

// newClient returns a Client on s with the TTL ttl, unless opts say
// otherwise, closed when the test ends.
func newClient(t *testing.T, s driver.Store, opts ...dsync.ClientOption) *dsync.Client {
	t.Helper()
	c, err := dsync.NewClient(s, append([]dsync.ClientOption{dsync.ClientWithTTL(ttl), dsync.ClientWithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// cutMembers fails member writes while down is set.
type cutMembers struct {
	leader.MemberStore
	down *atomic.Bool
}

func (c *cutMembers) PutMember(ctx context.Context, election string, m leader.Member) error {
	if c.down.Load() {
		return errCut
	}
	return c.MemberStore.PutMember(ctx, election, m)
}

// cutStore fails renewals while renewDown is set.
type cutStore struct {
	*memory.Store
	renewDown atomic.Bool
}

func (s *cutStore) RenewSession(ctx context.Context, id string, gen int, expires time.Time) (bool, error) {
	if s.renewDown.Load() {
		return false, errCut
	}
	return s.Store.RenewSession(ctx, id, gen, expires)
}

// InsertSession: a generation above 0 is a renewal's.
func (s *cutStore) InsertSession(ctx context.Context, sess driver.Session) error {
	if sess.Gen > 0 && s.renewDown.Load() {
		return errCut
	}
	return s.Store.InsertSession(ctx, sess)
}

// Roles: the store's, its record of up-time cut as its renewals are (a
// Client with an outage grace, the default, renews through it).
func (s *cutStore) Roles() driver.Roles {
	r := s.Store.Roles()
	if r.Uptime != nil {
		r.Uptime = cutUptime{UptimeStore: r.Uptime, down: &s.renewDown}
	}
	return r
}

// cutUptime fails renewals with the record of up-time while down is set.
type cutUptime struct {
	driver.UptimeStore
	down *atomic.Bool
}

func (u cutUptime) RenewSessionUp(ctx context.Context, id string, gen int, expires time.Time, up []driver.UpSpan) (time.Time, bool, error) {
	if u.down.Load() {
		return time.Time{}, false, errCut
	}
	return u.UptimeStore.RenewSessionUp(ctx, id, gen, expires, up)
}

// InsertSessionUp: a generation above 0 is a renewal's.
func (u cutUptime) InsertSessionUp(ctx context.Context, sess driver.Session) error {
	if sess.Gen > 0 && u.down.Load() {
		return errCut
	}
	return u.UptimeStore.InsertSessionUp(ctx, sess)
}

func newElection(t *testing.T, p *proc, opts ...leader.Option) *leader.Election {
	t.Helper()
	e, err := leader.NewElection(p.c, "cron", append([]leader.Option{quiet, leader.WithMembers(p.members)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestNewElectionRejectsBadInput(t *testing.T) {
	mem := newProc(t).c
	tests := []struct {
		name    string
		backend *dsync.Client
		elect   string
		opts    []leader.Option
		want    string
	}{
		{"nil client", nil, "x", nil, "nil client"},
		{"empty name", mem, "", nil, "empty election name"},
		{"nil member store", mem, "x", []leader.Option{leader.WithMembers(nil)}, "nil member store"},
		{"zero heartbeat", mem, "x", []leader.Option{leader.WithHeartbeatInterval(0)}, "heartbeat interval must be positive"},
		{"nil callback", mem, "x", []leader.Option{leader.OnLost(nil)}, "nil OnLost"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := leader.NewElection(tt.backend, tt.elect, tt.opts...)
			if err == nil || !strings.Contains(err.Error(), tt.want) || e != nil {
				t.Fatalf("NewElection = %v, %v; want an error containing %q", e, err, tt.want)
			}
		})
	}
}

func TestAtMostOneLeaderAcrossForcedLosses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		const candidates, losses = 5, 100
		ctx, cancel := context.WithCancel(context.Background())
		var leading atomic.Int32
		type term struct {
			who   int
			token uint64
		}
		elected := make(chan term)
		ended := make(chan error)
		cuts := make([]*cut, candidates)
		var wg sync.WaitGroup
		var elections []*leader.Election
		for i := range candidates {
			cuts[i] = w.cut(t)
			e := newElection(t, cuts[i].proc)
			elections = append(elections, e)
			wg.Go(func() {
				err := e.Run(ctx, func(lctx context.Context) error {
					if n := leading.Add(1); n != 1 {
						t.Errorf("%d leaders at once", n)
					}
					info, err := e.Leader(context.Background())
					if lctx.Err() == nil && (err != nil || info.ID != e.ID()) {
						t.Errorf("elected, but Leader() = %+v, %v", info, err)
					}
					select {
					case elected <- term{i, info.Token}:
					case <-lctx.Done():
					}
					<-lctx.Done()
					leading.Add(-1)
					select {
					case ended <- context.Cause(lctx):
					case <-ctx.Done():
					}
					return lctx.Err()
				})
				// The cause, perhaps with the last backend error attached
				// (a claim cut short by the cancellation), as LockContext
				// returns it.
				if !errors.Is(err, context.Canceled) {
					t.Errorf("Run returned %v, want the parent's cause", err)
				}
			})
		}
		var last uint64
		lastWho := -1
		for range losses {
			tm := <-elected
			// A term taken back (the outage grace, the default: the cut
			// ended before the session expired in the store, so nobody
			// could have led meanwhile) keeps its token; any other is
			// above the last.
			if tm.token < last || tm.token == last && tm.who != lastWho {
				t.Fatalf("term token %d of candidate %d after %d of candidate %d", tm.token, tm.who, last, lastWho)
			}
			last, lastWho = tm.token, tm.who
			cuts[tm.who].renewDown.Store(true) // force a loss
			if cause := <-ended; !errors.Is(cause, leader.ErrLeadershipLost) {
				t.Fatalf("leadership ended with cause %v, want ErrLeadershipLost", cause)
			}
			cuts[tm.who].renewDown.Store(false)
		}
		cancel()
		wg.Wait()
		for _, e := range elections {
			if err := e.Close(); err != nil {
				t.Error(err)
			}
		}
	})
}

func TestCampaignContextCauses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		ca := w.cut(t)
		a := newElection(t, ca.proc)
		b := newElection(t, w.process(t))
		defer a.Close()
		defer b.Close()
		ctx := context.Background()

		// Lost: the lease cannot be renewed, so the context ends at the
		// local deadline without hearing from the backend.
		lctx, err := a.Campaign(ctx)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		ca.renewDown.Store(true)
		<-lctx.Done()
		if cause := context.Cause(lctx); !errors.Is(cause, leader.ErrLeadershipLost) {
			t.Fatalf("cause %v, want ErrLeadershipLost", cause)
		}
		if d := time.Since(start); d > ttl {
			t.Fatalf("loss signalled %v after the last renewal, later than the TTL", d)
		}
		ca.renewDown.Store(false)

		// Resigned: another candidate takes over at once, not after a TTL.
		lctx, err = a.Campaign(ctx)
		if err != nil {
			t.Fatal(err)
		}
		bElected := make(chan context.Context)
		go func() {
			l, err := b.Campaign(ctx)
			if err != nil {
				t.Error(err)
			}
			bElected <- l
		}()
		time.Sleep(time.Second)
		start = time.Now()
		if err := a.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		if cause := context.Cause(lctx); cause != leader.ErrResigned {
			t.Fatalf("cause %v, want ErrResigned", cause)
		}
		bctx := <-bElected
		if d := time.Since(start); d >= ttl/10 {
			t.Fatalf("handover after Resign took %v", d)
		}

		// Parent ended: the parent's cause, and leadership is given up.
		errShutdown := errors.New("shutdown")
		if err := b.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		if context.Cause(bctx) != leader.ErrResigned {
			t.Fatal("b not resigned")
		}
		parent, cancel := context.WithCancelCause(ctx)
		lctx, err = a.Campaign(parent)
		if err != nil {
			t.Fatal(err)
		}
		cancel(errShutdown)
		<-lctx.Done()
		if cause := context.Cause(lctx); cause != errShutdown {
			t.Fatalf("cause %v, want the parent's", cause)
		}
		synctest.Wait()
		if _, err := a.Leader(ctx); !errors.Is(err, leader.ErrNoLeader) {
			t.Fatalf("Leader after the parent ended = %v, want ErrNoLeader", err)
		}

		// Parent ends before election: its cause, nothing held.
		if _, err := b.Campaign(ctx); err != nil {
			t.Fatal(err)
		}
		parent, cancel = context.WithCancelCause(ctx)
		go func() {
			time.Sleep(time.Second)
			cancel(errShutdown)
		}()
		if _, err := a.Campaign(parent); err != errShutdown {
			t.Fatalf("Campaign = %v, want the parent's cause", err)
		}
		info, err := a.Leader(ctx)
		if err != nil || info.ID != b.ID() {
			t.Fatalf("leader %+v, %v; want b", info, err)
		}
		if a.IsLeader() || !b.IsLeader() {
			t.Fatal("IsLeader wrong")
		}
	})
}

func TestCampaignTwiceIsAnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newElection(t, newProc(t))
		if _, err := e.Campaign(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Campaign(context.Background()); !errors.Is(err, leader.ErrCampaigning) {
			t.Fatalf("second Campaign = %v, want ErrCampaigning", err)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Campaign(context.Background()); !errors.Is(err, leader.ErrClosed) {
			t.Fatalf("Campaign after Close = %v, want ErrClosed", err)
		}
	})
}

func TestRunRestartsJobAndReturnsItsError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCut(t)
		e := newElection(t, c.proc)
		defer e.Close()
		errBoom := errors.New("job failed")
		var starts int
		err := e.Run(context.Background(), func(lctx context.Context) error {
			starts++
			if starts == 1 {
				c.renewDown.Store(true)
				<-lctx.Done()
				c.renewDown.Store(false)
				return lctx.Err()
			}
			return errBoom
		})
		if err != errBoom {
			t.Fatalf("Run = %v, want the job's error", err)
		}
		if starts != 2 {
			t.Fatalf("job started %d times, want 2 (once more after re-election)", starts)
		}
		if e.IsLeader() {
			t.Fatal("still leading after Run returned")
		}
		if _, err := e.Leader(context.Background()); !errors.Is(err, leader.ErrNoLeader) {
			t.Fatalf("Leader after Run = %v, want ErrNoLeader", err)
		}
	})
}

func TestObserveSeesEveryChangeInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newProc(t)
		var es []*leader.Election
		for range 3 {
			es = append(es, newElection(t, mem))
		}
		observer := newElection(t, mem)
		ctx, cancel := context.WithCancel(context.Background())
		seen := observer.Observe(ctx)
		collected := make(chan []leader.Info)
		go func() {
			var infos []leader.Info
			for info := range seen {
				infos = append(infos, info)
			}
			collected <- infos
		}()

		var want []string
		for round := range 6 {
			e := es[round%3]
			if _, err := e.Campaign(context.Background()); err != nil {
				t.Fatal(err)
			}
			want = append(want, e.ID())
			time.Sleep(2 * time.Second)
			if err := e.Resign(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		cancel()
		var got []string
		var last uint64
		for _, info := range <-collected {
			if info.Token <= last {
				t.Fatalf("token %d after %d", info.Token, last)
			}
			last = info.Token
			got = append(got, info.ID)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("observed %v, want %v", got, want)
		}
		for _, e := range append(es, observer) {
			e.Close()
		}
	})
}

func TestMembers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		ctx := context.Background()
		var cuts []*cut
		var es []*leader.Election
		for range 3 {
			c := w.cut(t)
			cuts = append(cuts, c)
			es = append(es, newElection(t, c.proc, leader.WithVersion("v1.2.3")))
		}
		if _, err := es[0].Campaign(ctx); err != nil {
			t.Fatal(err)
		}
		for _, e := range es[1:] {
			go e.Campaign(ctx) // blocks: es[0] leads
		}
		time.Sleep(time.Second)
		ms, err := es[0].Members(ctx)
		if err != nil || len(ms) != 3 {
			t.Fatalf("Members = %v, %v; want 3", ms, err)
		}
		leaders := 0
		for _, m := range ms {
			if m.Leader {
				leaders++
				if m.ID != es[0].ID() {
					t.Fatalf("member %s reports leading", m.ID)
				}
			}
			if m.Version != "v1.2.3" || m.PID == 0 {
				t.Fatalf("member status %+v", m)
			}
		}
		if leaders != 1 {
			t.Fatalf("%d members report leading", leaders)
		}
		info, err := es[1].Leader(ctx)
		if err != nil || info.ID != es[0].ID() || info.Version != "v1.2.3" {
			t.Fatalf("Leader = %+v, %v", info, err)
		}

		// A candidate whose heartbeats stop ages out after three intervals.
		cuts[2].heartbeatDown.Store(true)
		// Heartbeats every ttl/3 = 1s; a member is live for three of them.
		time.Sleep(2 * time.Second)
		if ms, _ := es[0].Members(ctx); len(ms) != 3 {
			t.Fatalf("%d members before aging out, want 3", len(ms))
		}
		time.Sleep(2 * time.Second)
		if ms, _ := es[0].Members(ctx); len(ms) != 2 {
			t.Fatalf("%d members after one stopped heartbeating, want 2", len(ms))
		}
		for _, e := range es {
			e.Close()
		}
		if ms, _ := es[0].Members(ctx); len(ms) != 0 {
			t.Fatalf("%d members after Close", len(ms))
		}
	})
}

func TestCallbacks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newProc(t)
		var events []string
		var mu sync.Mutex
		add := func(s string) { mu.Lock(); events = append(events, s); mu.Unlock() }
		e := newElection(t, mem,
			leader.OnElected(func(leader.Info) { add("elected") }),
			leader.OnLost(func(cause error) { add("lost: " + cause.Error()) }),
			leader.OnNewLeader(func(leader.Info) { add("new leader") }))
		if _, err := e.Campaign(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		if err := e.Resign(context.Background()); err != nil {
			t.Fatal(err)
		}
		e.Close()
		// The new-leader watch polls on its own, so it may see this term
		// before or after OnElected runs; both come before OnLost.
		slices.Sort(events[:2])
		want := "elected,new leader,lost: leader: resigned"
		if got := strings.Join(events, ","); got != want {
			t.Fatalf("events %q, want %q", got, want)
		}
	})
}
