package operator_test

import (
	"context"
	"strings"
	"testing"

	"github.com/go-dsync/dsync/leader/leadertest"
	"github.com/go-dsync/dsync/leader/operator"
)

// racingDirectives is a member store whose first insert of each Gen finds
// another operator's drain there already (ErrDirectiveExists), which its
// reads do not show yet.
type racingDirectives struct {
	*leadertest.MemoryMembers
	refused map[uint64]bool
}

func (r *racingDirectives) PutDirective(ctx context.Context, election string, d operator.Directive) error {
	if !r.refused[d.Gen] && d.Gen < 3 {
		r.refused[d.Gen] = true
		return operator.ErrDirectiveExists
	}
	return r.MemoryMembers.PutDirective(ctx, election, d)
}

// Drain, refused by a racing operator's insert of the same Gen, inserts
// the next one, even when its read does not show the other's yet.
func TestDrainRetriesAboveARefusedGen(t *testing.T) {
	r := &racingDirectives{MemoryMembers: leadertest.NewMemoryMembers(), refused: map[uint64]bool{}}
	d, err := operator.Drain(context.Background(), r, "jobs", "m", true, "test", "")
	if err != nil || d.Gen != 3 {
		t.Fatalf("Drain = %+v, %v; want Gen 3 after two refusals", d, err)
	}
}

// Drained counts, for each member, its drain directive of the highest Gen
// alone, whatever order the directives come in; transfer requests are
// not drains.
func TestDrained(t *testing.T) {
	drain := func(m string, gen uint64, on bool) operator.Directive {
		return operator.Directive{Kind: operator.DirectiveDrain, Member: m, Gen: gen, Drain: on}
	}
	ds := []operator.Directive{
		drain("a", 2, false), drain("a", 1, true), // undrained after
		drain("b", 1, false), drain("b", 3, true), // drained after
		drain("c", 1, true),
		{Kind: operator.DirectiveTransfer, Member: "d", Term: 5, Gen: 1},
	}
	got := operator.Drained(ds)
	if len(got) != 2 || !got["b"] || !got["c"] {
		t.Fatalf("Drained = %v, want b and c", got)
	}
}

// Key is a directive's identity: one per drain Gen of a member, one per
// transfer request number of a term, and the older single request's.
func TestDirectiveKey(t *testing.T) {
	for _, tt := range []struct {
		d    operator.Directive
		want string
	}{
		{operator.Directive{Kind: operator.DirectiveDrain, Member: "m", Gen: 4}, "#drain/m/4"},
		{operator.Directive{Kind: operator.DirectiveTransfer, Member: "x", Term: 7, Gen: 2}, "#transfer/7/2"},
		{operator.Directive{Kind: operator.DirectiveTransfer, Member: "x", Term: 7}, "#transfer/7"},
	} {
		if got := tt.d.Key(); got != tt.want {
			t.Errorf("%+v.Key() = %q, want %q", tt.d, got, tt.want)
		}
	}
}

// Drain and RequestTransfer refuse missing arguments before any write.
func TestOperatorRefusesMissingArguments(t *testing.T) {
	ctx := context.Background()
	ms := leadertest.NewMemoryMembers()
	for name, call := range map[string]func() error{
		"Drain without member":    func() error { _, err := operator.Drain(ctx, ms, "jobs", "", true, "", ""); return err },
		"Drain without partition": func() error { _, err := operator.Drain(ctx, ms, "", "m", true, "", ""); return err },
		"RequestTransfer without candidate": func() error {
			_, err := operator.RequestTransfer(ctx, nil, ms, "cron", 3, "", "", "")
			return err
		},
		"RequestTransfer of term 0 without Client": func() error {
			_, err := operator.RequestTransfer(ctx, nil, ms, "cron", 0, "b", "", "")
			return err
		},
	} {
		if err := call(); err == nil || !strings.HasPrefix(err.Error(), "operator: ") {
			t.Errorf("%s: %v, want an operator: error", name, err)
		}
	}
	if ds, _ := ms.Directives(ctx, "jobs"); len(ds) != 0 {
		t.Errorf("directives written: %v", ds)
	}
	if ds, _ := ms.Directives(ctx, "cron"); len(ds) != 0 {
		t.Errorf("directives written: %v", ds)
	}
}
