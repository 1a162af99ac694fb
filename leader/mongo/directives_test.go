package leadermongo_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-dsync/dsync/internal/testbed/mongotest"
	"github.com/go-dsync/dsync/leader"
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
	drain, err := leader.Drain(ctx, b.members, "jobs", "m1", true, "op@host", "maintenance")
	if err != nil || drain.Gen != 1 {
		t.Fatalf("Drain = %+v, %v", drain, err)
	}
	if err := b.members.PutDirective(ctx, "jobs", drain); !errors.Is(err, leader.ErrDirectiveExists) {
		t.Fatalf("the same drain again: %v, want ErrDirectiveExists", err)
	}
	undrain, err := leader.Drain(ctx, b.members, "jobs", "m1", false, "op@host", "")
	if err != nil || undrain.Gen != 2 {
		t.Fatalf("undrain = %+v, %v", undrain, err)
	}
	// A drain sent before the undrain, as a racing operator's, lands after
	// it under a lower generation: it changes nothing.
	if err := b.members.PutDirective(ctx, "jobs", leader.Directive{Kind: leader.DirectiveDrain, Member: "m2", Gen: 2, Drain: false}); err != nil {
		t.Fatal(err)
	}
	if err := b.members.PutDirective(ctx, "jobs", leader.Directive{Kind: leader.DirectiveDrain, Member: "m2", Gen: 1, Drain: true}); err != nil {
		t.Fatal(err)
	}
	if err := leader.RequestTransfer(ctx, b.members, "jobs#0", 7, "m1", "op@host", ""); err != nil {
		t.Fatal(err)
	}
	if err := leader.RequestTransfer(ctx, b.members, "jobs#0", 7, "m2", "op@host", ""); !errors.Is(err, leader.ErrDirectiveExists) {
		t.Fatalf("a second request for term 7: %v, want ErrDirectiveExists", err)
	}
	ds, err := b.members.Directives(ctx, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 4 {
		t.Fatalf("jobs has %d directives, want 4: %+v", len(ds), ds)
	}
	for _, d := range ds {
		if d.At.IsZero() || d.Kind != leader.DirectiveDrain {
			t.Errorf("directive %+v", d)
		}
		if d.Member == "m1" && d.Gen == 1 && (d.By != "op@host" || d.Reason != "maintenance" || !d.Drain) {
			t.Errorf("drain read back as %+v", d)
		}
	}
	if got := leader.Drained(ds); len(got) != 0 {
		t.Errorf("drained: %v, want none", got)
	}
	ds, err = b.members.Directives(ctx, "jobs#0")
	if err != nil || len(ds) != 1 || ds[0].Kind != leader.DirectiveTransfer || ds[0].Term != 7 || ds[0].Member != "m1" {
		t.Fatalf("jobs#0's directives: %+v, %v", ds, err)
	}
	ms, err := b.members.Members(ctx, "jobs", time.Minute)
	if err != nil || len(ms) != 1 || ms[0].ID != "m1" {
		t.Fatalf("members of jobs: %+v, %v", ms, err)
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
