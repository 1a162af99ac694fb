package leadertest_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/leader/leadertest"
	"github.com/go-dsync/dsync/leader/operator"
)

// Members lists the members seen within maxAge, in the time package's
// time (fake under synctest), ordered by ID; DeleteMember removes one.
func TestMembersByAgeAndID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := leadertest.NewMemoryMembers()
		for _, id := range []string{"old", "b", "a"} {
			if err := s.PutMember(ctx, "jobs", leader.Member{ID: id}); err != nil {
				t.Fatal(err)
			}
			if id == "old" {
				time.Sleep(10 * time.Second)
			}
		}
		live, err := s.Members(ctx, "jobs", 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if len(live) != 2 || live[0].ID != "a" || live[1].ID != "b" || !live[0].LastSeen.Equal(time.Now()) {
			t.Errorf("Members = %+v, want a then b, seen now", live)
		}
		if m, ok, err := s.Member(ctx, "jobs", "old"); err != nil || !ok || m.ID != "old" {
			t.Errorf("Member(old) = %+v, %v, %v; want it, however old", m, ok, err)
		}
		if err := s.DeleteMember(ctx, "jobs", "old"); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := s.Member(ctx, "jobs", "old"); err != nil || ok {
			t.Errorf("Member(old) after DeleteMember: found %v, %v", ok, err)
		}
		if live, err := s.Members(ctx, "other", time.Hour); err != nil || len(live) != 0 {
			t.Errorf("Members of another election = %+v, %v; want none", live, err)
		}
	})
}

// A directive's Key is stored once: a second insert, as a retry that
// landed twice, fails with ErrDirectiveExists and changes nothing.
// Transfer requests are read by term, and pruning deletes those of the
// earlier terms alone, never a drain.
func TestDirectivesOnceAndPrunedByTerm(t *testing.T) {
	ctx := context.Background()
	s := leadertest.NewMemoryMembers()
	put := func(d operator.Directive) error { return s.PutDirective(ctx, "jobs", d) }
	for _, d := range []operator.Directive{
		{Kind: operator.DirectiveDrain, Member: "m", Gen: 1, Drain: true},
		{Kind: operator.DirectiveTransfer, Member: "x", Term: 3, Gen: 1},
		{Kind: operator.DirectiveTransfer, Member: "y", Term: 4, Gen: 1},
	} {
		if err := put(d); err != nil {
			t.Fatal(err)
		}
	}
	if err := put(operator.Directive{Kind: operator.DirectiveDrain, Member: "m", Gen: 1}); !errors.Is(err, operator.ErrDirectiveExists) {
		t.Errorf("second drain of one Key = %v, want ErrDirectiveExists", err)
	}
	if ds, err := s.TransferRequests(ctx, "jobs", 4); err != nil || len(ds) != 1 || ds[0].Member != "y" {
		t.Errorf("TransferRequests(4) = %+v, %v; want y's", ds, err)
	}
	if err := s.PruneTransferRequests(ctx, "jobs", 4); err != nil {
		t.Fatal(err)
	}
	ds, err := s.Directives(ctx, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]operator.Directive{}
	for _, d := range ds {
		keys[d.Key()] = d
	}
	if _, ok := keys["#transfer/3/1"]; ok || len(keys) != 2 || !keys["#drain/m/1"].Drain {
		t.Errorf("after pruning before term 4: %+v, want the drain (still drained) and term 4's request", keys)
	}
}

// Every call fails with ErrUnreachable while the store is cut off, and
// with its context's cause once that ended; served again, it has lost
// nothing.
func TestUnreachableAndEndedContext(t *testing.T) {
	ctx := context.Background()
	s := leadertest.NewMemoryMembers()
	if err := s.PutMember(ctx, "jobs", leader.Member{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	calls := func(ctx context.Context) map[string]error {
		_, _, member := s.Member(ctx, "jobs", "a")
		_, members := s.Members(ctx, "jobs", time.Hour)
		_, directives := s.Directives(ctx, "jobs")
		_, requests := s.TransferRequests(ctx, "jobs", 1)
		return map[string]error{
			"PutMember":             s.PutMember(ctx, "jobs", leader.Member{ID: "b"}),
			"Member":                member,
			"Members":               members,
			"DeleteMember":          s.DeleteMember(ctx, "jobs", "a"),
			"PutDirective":          s.PutDirective(ctx, "jobs", operator.Directive{Kind: operator.DirectiveDrain, Member: "a", Gen: 1}),
			"Directives":            directives,
			"TransferRequests":      requests,
			"PruneTransferRequests": s.PruneTransferRequests(ctx, "jobs", 1),
		}
	}
	s.SetReachable(false)
	for name, err := range calls(ctx) {
		if !errors.Is(err, leadertest.ErrUnreachable) {
			t.Errorf("%s while unreachable = %v, want ErrUnreachable", name, err)
		}
	}
	s.SetReachable(true)
	cause := errors.New("test over")
	ended, cancel := context.WithCancelCause(ctx)
	cancel(cause)
	for name, err := range calls(ended) {
		if err != cause {
			t.Errorf("%s with an ended context = %v, want its cause", name, err)
		}
	}
	if live, err := s.Members(ctx, "jobs", time.Hour); err != nil || len(live) != 1 || live[0].ID != "a" {
		t.Errorf("Members after the failed calls = %+v, %v; want a alone", live, err)
	}
}
