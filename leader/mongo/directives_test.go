package leadermongo_test

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/go-dsync/dsync/internal/testbed/mongotest"
	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/leader/operator"
)

// TestDirectives: directives are inserted once (a second insert of one
// Key is ErrDirectiveExists), Drain writes the next generation, the
// highest generation decides, a late drain of a lower one changes
// nothing, and no directive shows as a member or lands in another
// election's list.
func TestDirectives(t *testing.T) {
	db := mongotest.NewDatabase(t)
	b := newElections(t, db)
	ctx := context.Background()
	if err := b.members.PutMember(ctx, "jobs", leader.Member{ID: "m1", Value: "{}"}); err != nil {
		t.Fatal(err)
	}
	drain, err := operator.Drain(ctx, b.members, "jobs", "m1", true, "op@host", "maintenance")
	if err != nil || drain.Gen != 1 {
		t.Fatalf("Drain = %+v, %v", drain, err)
	}
	if err := b.members.PutDirective(ctx, "jobs", drain); !errors.Is(err, operator.ErrDirectiveExists) {
		t.Fatalf("the same drain again: %v, want ErrDirectiveExists", err)
	}
	undrain, err := operator.Drain(ctx, b.members, "jobs", "m1", false, "op@host", "")
	if err != nil || undrain.Gen != 2 {
		t.Fatalf("undrain = %+v, %v", undrain, err)
	}
	// A drain sent before the undrain, as a racing operator's, lands after
	// it under a lower generation: it changes nothing.
	if err := b.members.PutDirective(ctx, "jobs", operator.Directive{Kind: operator.DirectiveDrain, Member: "m2", Gen: 2, Drain: false}); err != nil {
		t.Fatal(err)
	}
	if err := b.members.PutDirective(ctx, "jobs", operator.Directive{Kind: operator.DirectiveDrain, Member: "m2", Gen: 1, Drain: true}); err != nil {
		t.Fatal(err)
	}
	if r, err := operator.RequestTransfer(ctx, nil, b.members, "jobs#0", 7, "m1", "op@host", ""); err != nil || r.Gen != 1 {
		t.Fatalf("a request for term 7: %+v, %v; want number 1", r, err)
	}
	if r, err := operator.RequestTransfer(ctx, nil, b.members, "jobs#0", 7, "m2", "op@host", ""); err != nil || r.Gen != 2 {
		t.Fatalf("a second request for term 7: %+v, %v; want number 2", r, err)
	}
	if err := b.members.PutDirective(ctx, "jobs#0", operator.Directive{Kind: operator.DirectiveTransfer, Term: 7, Gen: 2, Member: "m1"}); !errors.Is(err, operator.ErrDirectiveExists) {
		t.Fatalf("request 2 of term 7 again: %v, want ErrDirectiveExists", err)
	}
	ds, err := b.members.Directives(ctx, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 4 {
		t.Fatalf("jobs has %d directives, want 4: %+v", len(ds), ds)
	}
	for _, d := range ds {
		if d.At.IsZero() || d.Kind != operator.DirectiveDrain {
			t.Errorf("directive %+v", d)
		}
		if d.Member == "m1" && d.Gen == 1 && (d.By != "op@host" || d.Reason != "maintenance" || !d.Drain) {
			t.Errorf("drain read back as %+v", d)
		}
	}
	if got := operator.Drained(ds); len(got) != 0 {
		t.Errorf("drained: %v, want none", got)
	}
	ds, err = b.members.Directives(ctx, "jobs#0")
	slices.SortFunc(ds, func(a, b operator.Directive) int { return cmp.Compare(a.Gen, b.Gen) })
	if err != nil || len(ds) != 2 || ds[0].Kind != operator.DirectiveTransfer || ds[0].Term != 7 || ds[0].Member != "m1" || ds[1].Gen != 2 || ds[1].Member != "m2" {
		t.Fatalf("jobs#0's directives: %+v, %v", ds, err)
	}
	ms, err := b.members.Members(ctx, "jobs", time.Minute)
	if err != nil || len(ms) != 1 || ms[0].ID != "m1" {
		t.Fatalf("members of jobs: %+v, %v", ms, err)
	}
	// A request of a release before the numbering: "#transfer/TERM", no
	// gen (PutDirective of Gen 0 writes it so). It reads as number 0, and
	// the numbered ones go beside it.
	if err := b.members.PutDirective(ctx, "jobs#1", operator.Directive{Kind: operator.DirectiveTransfer, Term: 5, Member: "m1"}); err != nil {
		t.Fatal(err)
	}
	if r, err := operator.RequestTransfer(ctx, nil, b.members, "jobs#1", 5, "m2", "op@host", ""); err != nil || r.Gen != 1 {
		t.Fatalf("a request beside an older release's: %+v, %v; want number 1", r, err)
	}
	ds, err = b.members.Directives(ctx, "jobs#1")
	slices.SortFunc(ds, func(a, b operator.Directive) int { return cmp.Compare(a.Gen, b.Gen) })
	if err != nil || len(ds) != 2 || ds[0].Gen != 0 || ds[0].Key() != "#transfer/5" || ds[0].Member != "m1" || ds[1].Key() != "#transfer/5/1" {
		t.Fatalf("jobs#1's directives: %+v, %v", ds, err)
	}
	// Read together, by one find: the same members and directives.
	if err := b.members.PutMember(ctx, "jobs", leader.Member{ID: "m0", Value: "{}"}); err != nil {
		t.Fatal(err)
	}
	if err := b.members.PutMember(ctx, "jobs", leader.Member{ID: "m1", Value: `{"w":2}`}); err != nil {
		t.Fatal(err)
	}
	ms, ds, err = b.members.MembersAndDirectives(ctx, "jobs", time.Minute)
	if err != nil || len(ms) != 2 || ms[0].ID != "m0" || ms[1].ID != "m1" || ms[1].Value != `{"w":2}` || len(ds) != 4 {
		t.Fatalf("MembersAndDirectives of jobs: %+v, %+v, %v", ms, ds, err)
	}
}
