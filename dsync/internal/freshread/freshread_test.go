package freshread

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
)

// reads is a read function whose reads wait for the test: each read sent
// is recorded, with its argument and its sender's name (the context's
// value), and answers once the test releases it.
type reads struct {
	mu   sync.Mutex
	sent []*sentRead
}

type sentRead struct {
	arg     int
	sender  string
	release chan struct{}
	ctx     context.Context
}

type nameKey struct{}

func named(name string) context.Context {
	return context.WithValue(context.Background(), nameKey{}, name)
}

func (r *reads) read(ctx context.Context, arg int) (int, error) {
	s := &sentRead{arg: arg, sender: ctx.Value(nameKey{}).(string), release: make(chan struct{}), ctx: ctx}
	r.mu.Lock()
	r.sent = append(r.sent, s)
	n := len(r.sent)
	r.mu.Unlock()
	select {
	case <-s.release:
		return n * 100, nil // the answer says which read it was
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (r *reads) nth(t *testing.T, i int) *sentRead {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.sent) <= i {
		t.Fatalf("%d reads sent; want read %d", len(r.sent), i+1)
	}
	return r.sent[i]
}

func (r *reads) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sent)
}

// since is a Group whose argument is a time from which a read returns
// everything: an earlier one covers a later one.
func since() *Group[string, int, int] {
	return &Group[string, int, int]{Covers: func(a, b int) bool { return a <= b }, Merge: func(a, b int) int { return min(a, b) }}
}

type answer struct {
	v   int
	err error
}

func ask(g *Group[string, int, int], ctx context.Context, key string, arg int, r *reads) chan answer {
	c := make(chan answer, 1)
	go func() {
		v, err := g.Do(ctx, key, arg, r.read)
		c <- answer{v, err}
	}()
	return c
}

// TestNoCallerGetsAReadSentBeforeIt: callers that ask while a read is in
// flight are not answered by it; one read, sent once it ends, answers them
// all, with their arguments merged.
func TestNoCallerGetsAReadSentBeforeIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, r := since(), &reads{}
		first := ask(g, named("a"), "k", 10, r)
		synctest.Wait()
		var later []chan answer
		for i, arg := range []int{7, 3, 12} {
			later = append(later, ask(g, named(string(rune('b'+i))), "k", arg, r))
		}
		synctest.Wait()
		if n, in := r.count(), g.Callers("k"); n != 1 || in != 4 {
			t.Fatalf("%d reads sent while the first was in flight, %d callers in; want 1 and 4", n, in)
		}
		close(r.nth(t, 0).release)
		if a := <-first; a.v != 100 || a.err != nil {
			t.Errorf("the first caller got %+v; want read 1's answer", a)
		}
		synctest.Wait()
		if n := r.count(); n != 2 {
			t.Fatalf("%d reads sent; want one more, for the three that waited", n)
		}
		if got := r.nth(t, 1).arg; got != 3 {
			t.Errorf("the second read was sent with %d; want 3, the earliest the waiting callers asked for", got)
		}
		close(r.nth(t, 1).release)
		for i, c := range later {
			if a := <-c; a.v != 200 || a.err != nil {
				t.Errorf("waiting caller %d got %+v; want read 2's answer", i, a)
			}
		}
		synctest.Wait()
		if len(g.slots) != 0 || g.Callers("k") != 0 {
			t.Errorf("%d keys kept after every call returned", len(g.slots))
		}
	})
}

// TestEachWaitsForTheNextRead: a read answers only the callers that asked
// before it was sent; those that ask while it is in flight (b; then c and
// d, while b's is) wait for the next, sent with the earliest argument any
// of them asked for.
func TestEachWaitsForTheNextRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, r := since(), &reads{}
		first := ask(g, named("a"), "k", 10, r)
		synctest.Wait()
		b := ask(g, named("b"), "k", 5, r)
		synctest.Wait()
		close(r.nth(t, 0).release)
		<-first
		synctest.Wait() // b sent read 2, with 5
		c := ask(g, named("c"), "k", 2, r)
		d := ask(g, named("d"), "k", 2, r)
		synctest.Wait()
		if n := r.count(); n != 2 {
			t.Fatalf("%d reads sent; want 2 (c and d wait: read 2 was sent before they asked)", n)
		}
		close(r.nth(t, 1).release)
		if a := <-b; a.v != 200 {
			t.Errorf("b got %+v; want read 2's answer", a)
		}
		synctest.Wait()
		if n := r.count(); n != 3 || r.nth(t, 2).arg != 2 {
			t.Fatalf("%d reads sent; want a third, with 2, for c and d", n)
		}
		close(r.nth(t, 2).release)
		for _, ch := range []chan answer{c, d} {
			if a := <-ch; a.v != 300 || a.err != nil {
				t.Errorf("got %+v; want read 3's answer", a)
			}
		}
	})
}

// TestSenderLeaves: when the caller that sent a read leaves (its context
// ends), those that joined it ask again and get an answer; the sender gets
// its context's error. A caller that leaves while waiting gets its
// context's error, and the read goes on for the others.
func TestSenderLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, r := since(), &reads{}
		first := ask(g, named("a"), "k", 1, r)
		synctest.Wait()
		ctxs := map[string]context.CancelFunc{}
		answers := map[string]chan answer{}
		for _, name := range []string{"b", "c", "d"} {
			ctx, cancel := context.WithCancel(named(name))
			ctxs[name] = cancel
			answers[name] = ask(g, ctx, "k", 1, r)
		}
		synctest.Wait()
		ctxs["d"]() // d leaves while it waits
		if a := <-answers["d"]; !errors.Is(a.err, context.Canceled) {
			t.Errorf("d, which left, got %+v; want its context's error", a)
		}
		close(r.nth(t, 0).release)
		<-first
		synctest.Wait()
		second := r.nth(t, 1)
		ctxs[second.sender]() // read 2's sender leaves
		if a := <-answers[second.sender]; !errors.Is(a.err, context.Canceled) {
			t.Errorf("read 2's sender %s got %+v; want its context's error", second.sender, a)
		}
		synctest.Wait()
		other := map[string]string{"b": "c", "c": "b"}[second.sender]
		third := r.nth(t, 2)
		if third.sender != other {
			t.Fatalf("read 3 was sent by %s; want %s, which had joined read 2", third.sender, other)
		}
		close(third.release)
		if a := <-answers[other]; a.v != 300 || a.err != nil {
			t.Errorf("%s got %+v; want read 3's answer", other, a)
		}
	})
}

// TestKeysAreApart: reads of different keys are sent at once, each
// answering its own callers.
func TestKeysAreApart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, r := since(), &reads{}
		a := ask(g, named("a"), "k1", 1, r)
		b := ask(g, named("b"), "k2", 1, r)
		synctest.Wait()
		if n := r.count(); n != 2 {
			t.Fatalf("%d reads sent for two keys; want 2", n)
		}
		close(r.nth(t, 0).release)
		close(r.nth(t, 1).release)
		if x, y := <-a, <-b; x.err != nil || y.err != nil || x.v == y.v {
			t.Errorf("answers %+v and %+v; want each key's own read", x, y)
		}
	})
}

// TestZeroGroup: in the zero Group, every read sent after a caller asked
// answers it, whatever their arguments.
func TestZeroGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := &Group[string, int, int]{}
		r := &reads{}
		first := ask(g, named("a"), "k", 1, r)
		synctest.Wait()
		b := ask(g, named("b"), "k", 9, r)
		c := ask(g, named("c"), "k", 4, r)
		synctest.Wait()
		close(r.nth(t, 0).release)
		<-first
		synctest.Wait()
		if n := r.count(); n != 2 {
			t.Fatalf("%d reads sent; want 2", n)
		}
		close(r.nth(t, 1).release)
		if x, y := <-b, <-c; x.v != 200 || y.v != 200 {
			t.Errorf("b got %+v, c got %+v; want read 2's answer for both", x, y)
		}
	})
}

// TestWaitsOutAReadThatDoesNotCover: a read sent after a caller asked
// answers it only if its argument covers the caller's. (Merging the
// waiting callers' arguments into the next read makes every such read
// cover them, but for one sent by a newcomer once a read its sender
// abandoned has ended: set up here by hand.)
func TestWaitsOutAReadThatDoesNotCover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, r := since(), &reads{}
		f := &flight[int, int]{seq: 1, arg: 9, done: make(chan struct{}), v: -1}
		g.slots = map[string]*slot[int, int]{"k": {flight: f}}
		c := ask(g, named("c"), "k", 5, r)
		synctest.Wait()
		g.mu.Lock()
		g.slots["k"].flight = nil
		f.seq = g.sends + 1 // as if sent after c asked
		g.mu.Unlock()
		close(f.done)
		synctest.Wait()
		if n := r.count(); n != 1 || r.nth(t, 0).arg != 5 {
			t.Fatalf("%d reads sent; want c's own, with 5", n)
		}
		close(r.nth(t, 0).release)
		if a := <-c; a.v != 100 {
			t.Errorf("c got %+v; want its own read's answer, not the read with 9's", a)
		}
	})
}

// TestAWaiterWokenLateTakesTheReadSentForIt: b and c ask while a's read
// is in flight; once it ends, c sends the next read, for both, and it ends
// before b has looked again (a busy machine schedules b late). That read
// answers b too, rather than b sending a third.
func TestAWaiterWokenLateTakesTheReadSentForIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, r := since(), &reads{}
		bLooks := make(chan struct{})
		testHookWoke = func(ctx context.Context) {
			if ctx.Value(nameKey{}) == "b" {
				<-bLooks
			}
		}
		defer func() { testHookWoke = nil }()
		first := ask(g, named("a"), "k", 10, r)
		synctest.Wait()
		b := ask(g, named("b"), "k", 5, r)
		c := ask(g, named("c"), "k", 7, r)
		synctest.Wait()
		close(r.nth(t, 0).release)
		<-first
		synctest.Wait() // c sent read 2; b has not looked again
		if n, sender := r.count(), r.nth(t, r.count()-1).sender; n != 2 || sender != "c" {
			t.Fatalf("%d reads sent, the last by %s; want read 2, by c", n, sender)
		}
		close(r.nth(t, 1).release)
		if a := <-c; a.v != 200 {
			t.Fatalf("c got %+v; want read 2's answer", a)
		}
		close(bLooks)
		if a := <-b; a.v != 200 || a.err != nil {
			t.Errorf("b got %+v; want read 2's answer, sent after b asked", a)
		}
		if n := r.count(); n != 2 {
			t.Errorf("%d reads sent; want 2: read 2 answers b too", n)
		}
	})
}
