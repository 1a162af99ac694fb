package dsync

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// fixedClock is a Clock that reads the time the test set; its timers
// never fire.
type fixedClock struct{ now time.Time }

func (c fixedClock) Now() time.Time { return c.now }
func (fixedClock) AfterFunc(time.Duration, func()) (stop func() bool) {
	return func() bool { return true }
}

// TestRecordStall: recordStall inserts one record, stamped with the
// store's time at sending, its Since and LastProgress the Clock readings
// given, counted back from that stamp, with this process's host and pid;
// a second record of the same claim is taken as recorded and leaves the
// first as it was; Stalls lists it.
func TestRecordStall(t *testing.T) {
	ctx := t.Context()
	mem := memory.New()
	clock := fixedClock{now: time.Now()}
	c, err := NewClient(mem, WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	first := driver.Stall{Key: "dsync:sem/k", Token: 12, Owner: "o1", Session: "s1", Nonce: "n1",
		Since: clock.now.Add(-time.Minute), LastProgress: clock.now.Add(-10 * time.Second)}
	before := mem.ServerTime().Earliest
	if err := c.recordStall(ctx, first); err != nil {
		t.Fatalf("recordStall: %v", err)
	}
	after := mem.ServerTime().Latest
	again := first
	again.Owner, again.Since = "o2", time.Time{}
	if err := c.recordStall(ctx, again); err != nil {
		t.Errorf("recordStall of a claim recorded already = %v; want nil (recorded)", err)
	}
	got, err := c.stalls(ctx)
	if err != nil || len(got) != 1 {
		t.Fatalf("Stalls = %+v, %v; want one record", got, err)
	}
	s := got[0]
	if s.At.Before(before) || s.At.After(after) {
		t.Errorf("At = %v; want the store's time at sending, in [%v, %v]", s.At, before, after)
	}
	host, _ := os.Hostname()
	want := driver.Stall{Key: "dsync:sem/k", Token: 12, Owner: "o1", Session: "s1", Nonce: "n1", Host: host, PID: os.Getpid(),
		Since: s.At.Add(-time.Minute), LastProgress: s.At.Add(-10 * time.Second), At: s.At}
	if s != want {
		t.Errorf("Stalls()[0] = %+v; want %+v", s, want)
	}

	// A host and pid given stay; an unknown Since stays unknown.
	other := driver.Stall{Key: "k", Token: 3, Session: "s1", Nonce: "n2", Host: "elsewhere", PID: 9, LastProgress: clock.now}
	if err := c.recordStall(ctx, other); err != nil {
		t.Fatalf("recordStall: %v", err)
	}
	got, err = c.stalls(ctx)
	if err != nil || len(got) != 2 {
		t.Fatalf("Stalls = %+v, %v; want two records", got, err)
	}
	for _, s := range got {
		if s.Nonce == "n2" && (s.Host != "elsewhere" || s.PID != 9 || !s.Since.IsZero() || !s.LastProgress.Equal(s.At)) {
			t.Errorf("record n2 = %+v; want host elsewhere, pid 9, no Since, LastProgress = At", s)
		}
	}
}

// TestRecordStallFails: an error of the store comes back as it is; a
// closed Client records nothing.
func TestRecordStallFails(t *testing.T) {
	ctx := t.Context()
	broken := errors.New("store down")
	mem := memory.New()
	view := mem.Intercept(func(ctx context.Context, call memory.Call, serve func() error) error {
		if call.Op == "RecordStall" {
			return broken
		}
		return nil
	})
	c, err := NewClient(view)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.recordStall(ctx, driver.Stall{Key: "k", Session: "s", Nonce: "n"}); !errors.Is(err, broken) {
		t.Errorf("recordStall on a failing store = %v; want %v", err, broken)
	}
	c.Close()
	if err := c.recordStall(ctx, driver.Stall{Key: "k", Session: "s", Nonce: "n2"}); !errors.Is(err, ErrClosed) {
		t.Errorf("recordStall after Close = %v; want ErrClosed", err)
	}
	if _, err := c.stalls(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Stalls after Close = %v; want ErrClosed", err)
	}
	if got, err := mem.Roles().Stalls.Stalls(ctx); err != nil || len(got) != 0 {
		t.Errorf("records = %+v, %v; want none", got, err)
	}
}

// noStalls is a store without the Stalls role.
type noStalls struct{ *memory.Store }

func (s noStalls) Roles() driver.Roles {
	r := s.Store.Roles()
	r.Stalls = nil
	return r
}

// TestRecordStallWithoutTheRole: on a store that records no stalls,
// recordStall records nothing and says nothing went wrong, and Stalls
// lists none.
func TestRecordStallWithoutTheRole(t *testing.T) {
	ctx := t.Context()
	mem := memory.New()
	c, err := NewClient(noStalls{mem})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.recordStall(ctx, driver.Stall{Key: "k", Session: "s", Nonce: "n"}); err != nil {
		t.Errorf("recordStall without the role = %v; want nil", err)
	}
	if got, err := c.stalls(ctx); err != nil || got != nil {
		t.Errorf("Stalls without the role = %+v, %v; want nil, nil", got, err)
	}
	if got, err := mem.Roles().Stalls.Stalls(ctx); err != nil || len(got) != 0 {
		t.Errorf("records in the store = %+v, %v; want none", got, err)
	}
}
