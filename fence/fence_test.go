package fence_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/go-dsync/dsync/fence"
)

func TestCheckRefusesBadInput(t *testing.T) {
	for _, c := range []struct {
		key   string
		token uint64
		want  error
	}{
		{"", 1, fence.ErrBadKey},
		{strings.Repeat("k", fence.MaxKeyLen+1), 1, fence.ErrBadKey},
		{"k", 0, fence.ErrBadToken},
		{"k", fence.MaxToken + 1, fence.ErrBadToken},
	} {
		if err := fence.Check(c.key, c.token); !errors.Is(err, c.want) {
			t.Errorf("Check(%d bytes, %d) = %v, want %v", len(c.key), c.token, err, c.want)
		}
	}
	if err := fence.Check(strings.Repeat("k", fence.MaxKeyLen), fence.MaxToken); err != nil {
		t.Errorf("Check at the bounds: %v", err)
	}
}

func TestStaleErrorMatchesErrStale(t *testing.T) {
	err := error(&fence.StaleError{Key: "k", Token: 3, Mark: 5})
	if !errors.Is(err, fence.ErrStale) {
		t.Fatal("a StaleError does not match ErrStale")
	}
	if got, want := err.Error(), `fence: stale token 3 for key "k": token 5 was accepted first`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestMemoryRaisesAndRefuses(t *testing.T) {
	var m fence.Memory
	ctx := t.Context()
	for _, token := range []uint64{2, 2, 5} {
		release, err := m.Admit(ctx, "k", token)
		if err != nil {
			t.Fatalf("Admit(%d): %v", token, err)
		}
		release()
		release() // a second call does nothing
	}
	_, err := m.Admit(ctx, "k", 4)
	var stale *fence.StaleError
	if !errors.As(err, &stale) || stale.Mark != 5 || stale.Token != 4 {
		t.Fatalf("Admit(4) after 5 = %v, want a StaleError with mark 5", err)
	}
	if got := m.Mark("k"); got != 5 {
		t.Errorf("Mark = %d, want 5", got)
	}
	if release, err := m.Admit(ctx, "other", 1); err != nil {
		t.Errorf("another key: %v", err)
	} else {
		release()
	}
	if _, err := m.Admit(ctx, "", 1); !errors.Is(err, fence.ErrBadKey) {
		t.Errorf("empty key: %v", err)
	}
}

// A second writer of a key waits while the first is admitted, and one of
// another key does not; a wait ends with its context.
func TestMemoryAdmitsOneWriterAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var m fence.Memory
		release, err := m.Admit(t.Context(), "k", 1)
		if err != nil {
			t.Fatal(err)
		}
		admitted := make(chan error)
		go func() {
			r, err := m.Admit(context.Background(), "k", 2)
			if err == nil {
				r()
			}
			admitted <- err
		}()
		r, err := m.Admit(t.Context(), "other", 1)
		if err != nil {
			t.Fatal(err)
		}
		r()
		ctx, cancel := context.WithCancel(t.Context())
		waiting := make(chan error)
		go func() {
			_, err := m.Admit(ctx, "k", 3)
			waiting <- err
		}()
		synctest.Wait()
		select {
		case err := <-admitted:
			t.Fatalf("a second writer was admitted while the first was: %v", err)
		default:
		}
		cancel()
		if err := <-waiting; !errors.Is(err, context.Canceled) {
			t.Errorf("a wait whose context ended: %v", err)
		}
		release()
		if err := <-admitted; err != nil {
			t.Errorf("the second writer, after release: %v", err)
		}
	})
}
