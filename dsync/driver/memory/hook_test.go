package memory_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

func doc(id string) driver.Doc {
	return driver.Doc{ID: id, Key: "k", Kind: driver.KindClaim}
}

// exists reports whether id is stored, read past every hook.
func exists(t *testing.T, s *memory.Store, id string) bool {
	t.Helper()
	_, found, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// A hook sees every call of its view with a context, of the roles too,
// and none of the store's own or of another view.
func TestInterceptSeesEveryCall(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	var ops []string
	v := mem.Intercept(func(_ context.Context, c memory.Call, _ func() error) error {
		ops = append(ops, c.Op)
		return nil
	})
	r := v.Roles()
	_ = v.Prepare(ctx)
	_ = v.Insert(ctx, doc("a"))
	_, _, _ = v.Get(ctx, "a")
	_, _ = r.Runs.GetRun(ctx, "k", 1, 2)
	_, _ = r.Maintenance.Compact(ctx, time.Time{}, nil)
	_ = r.Directory.PutKeys(ctx, []string{"k"})
	for range r.Directory.ListKeys(ctx, driver.KeyQuery{}) {
	}
	_ = r.Feed.Publish(ctx, driver.Event{Kind: driver.Ended, Key: "k", Epoch: 1})
	_, _ = r.Peers.Peers(ctx, time.Time{})
	_, _, _ = r.Revocations.Revoked(ctx, "s")
	_ = mem.Insert(ctx, doc("b")) // the store beneath: no hook
	want := []string{"Prepare", "Insert", "Get", "GetRun", "Compact", "PutKeys", "ListKeys", "Publish", "Peers", "Revoked"}
	if !slices.Equal(ops, want) {
		t.Errorf("the hook saw %q, want %q", ops, want)
	}
}

// A hook fails a call unapplied, or applied with its reply lost, or
// serves it later: a write given up on lands then.
func TestInterceptFailsOrLandsLate(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	errLost := errors.New("no reply")
	var late func() error
	v := mem.Intercept(func(_ context.Context, c memory.Call, serve func() error) error {
		switch c.Docs[0].ID {
		case "dropped":
			return errLost
		case "reply lost":
			_ = serve()
			return errLost
		case "late":
			late = serve
			return errLost
		}
		return nil
	})
	for _, id := range []string{"dropped", "reply lost", "late"} {
		if err := v.Insert(ctx, doc(id)); err != errLost {
			t.Errorf("Insert(%s) = %v, want the hook's error", id, err)
		}
	}
	if exists(t, mem, "dropped") || !exists(t, mem, "reply lost") || exists(t, mem, "late") {
		t.Fatal("want only the insert whose reply was lost applied")
	}
	if err := late(); err != nil || !exists(t, mem, "late") {
		t.Errorf("the late insert served: %v, stored %v; want it landed", err, exists(t, mem, "late"))
	}
	if err := v.Insert(ctx, doc("ok")); err != nil || !exists(t, mem, "ok") {
		t.Errorf("Insert let through = %v, want it applied", err)
	}
}

// A call whose context ends while a hook holds it fails with the
// context's cause, unapplied; a call made with a context ended already is
// never sent.
func TestInterceptHeldPastItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memory.New()
		seen := 0
		v := mem.Intercept(func(ctx context.Context, _ memory.Call, _ func() error) error {
			seen++
			<-ctx.Done()
			return nil
		})
		cause := errors.New("given up")
		ctx, cancel := context.WithCancelCause(context.Background())
		time.AfterFunc(time.Second, func() { cancel(cause) })
		if err := v.Insert(ctx, doc("a")); err != cause {
			t.Errorf("Insert held past its context = %v, want its cause", err)
		}
		if err := v.Insert(ctx, doc("b")); err != cause || seen != 1 {
			t.Errorf("Insert with an ended context = %v, the hook seeing %d calls; want its cause, and the first call only seen", err, seen)
		}
		if exists(t, mem, "a") || exists(t, mem, "b") {
			t.Error("a call failed by its context was applied")
		}
	})
}

// A Process's switches cover its roles' calls, and a view intercepted on
// it: a write its sender gave up on while the store did not answer lands
// once it answers.
func TestProcessCoversRolesAndLandsLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem := memory.New()
		p := mem.Process()
		counted := 0
		v := p.Intercept(func(context.Context, memory.Call, func() error) error { counted++; return nil })
		p.SetReachable(false)
		if _, err := v.Roles().Runs.GetRun(ctx, "k", 1, 2); err != memory.ErrUnreachable {
			t.Errorf("GetRun while unreachable = %v, want ErrUnreachable", err)
		}
		if err := v.Roles().Feed.Publish(ctx, driver.Event{}); err != memory.ErrUnreachable {
			t.Errorf("Publish while unreachable = %v, want ErrUnreachable", err)
		}
		p.SetReachable(true)
		p.SetAnswering(false)
		short, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if err := v.Roles().Directory.PutKeys(short, []string{"k"}); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("PutKeys while the store does not answer = %v, want the deadline", err)
		}
		if keys := mem.Keys(); len(keys) != 0 {
			t.Fatalf("keys %q recorded while the store did not answer", keys)
		}
		p.SetAnswering(true)
		if keys := mem.Keys(); !slices.Equal(keys, []string{"k"}) || counted != 3 {
			t.Errorf("after the store answers: keys %q, %d calls seen; want k landed late, 3 calls", keys, counted)
		}
	})
}
