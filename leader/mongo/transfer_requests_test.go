package leadermongo_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/internal/testbed/longtest"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
	"github.com/go-dsync/dsync/leader"
	leadermongo "github.com/go-dsync/dsync/leader/mongo"
	"github.com/go-dsync/dsync/leader/operator"
)

// memberCommands records the commands sent on the members collection.
type memberCommands struct {
	mu   sync.Mutex
	cmds []bson.Raw
}

func (m *memberCommands) monitor() *options.ClientOptions {
	return options.Client().SetMonitor(&event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		if coll, _ := e.Command.Lookup(e.CommandName).StringValueOK(); coll != leadermongo.DefaultMembersCollection {
			return
		}
		m.mu.Lock()
		m.cmds = append(m.cmds, append(bson.Raw(nil), e.Command...))
		m.mu.Unlock()
	}})
}

// take returns the commands recorded since the last take.
func (m *memberCommands) take() []bson.Raw {
	m.mu.Lock()
	defer m.mu.Unlock()
	cmds := m.cmds
	m.cmds = nil
	return cmds
}

// kindOf says what cmd is: "status" (a member's status written), "find
// FROM" (a find, FROM its filter's lowest _id), "delete", or its name.
func kindOf(cmd bson.Raw) string {
	name := cmd.Index(0).Key()
	switch name {
	case "find":
		from, _ := cmd.Lookup("filter", "_id", "$gte").StringValueOK()
		return "find " + from
	case "update", "insert", "findAndModify":
		return "status"
	}
	return name
}

// TestLeaderReadsItsTermsRequests: on the server, the leader's heartbeat
// reads its term's transfer requests by one find on their range of _ids,
// once per heartbeat (as many finds as status writes, at most), never every
// directive of the election; and its first heartbeat deletes the
// requests of the terms before its own, by one delete, and no drain.
func TestLeaderReadsItsTermsRequests(t *testing.T) {
	var rec memberCommands
	db := mongotest.NewDatabase(t, rec.monitor())
	b := newElections(t, db)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	for _, d := range []operator.Directive{
		{Kind: operator.DirectiveTransfer, Term: 1, Member: "x"}, // the key without a number
		{Kind: operator.DirectiveTransfer, Term: 1, Gen: 2, Member: "x"},
		{Kind: operator.DirectiveDrain, Member: "m", Gen: 1, Drain: true},
	} {
		if err := b.members.PutDirective(ctx, "e", d); err != nil {
			t.Fatal(err)
		}
	}
	// A heartbeat's writes have its interval to finish: two seconds, which
	// a busy machine's server needs (at 100 ms, none finished there; at
	// one second, a prune timed out and was sent again).
	e := elect(t, b, "e", leader.WithHeartbeatInterval(2*time.Second))
	defer e.Close()
	if _, err := e.Campaign(ctx); err != nil {
		t.Fatal(err)
	}
	info, err := e.Leader(ctx)
	if err != nil || info.ID != e.ID() {
		t.Fatalf("Leader = %+v, %v", info, err)
	}
	// The first heartbeat of the term prunes, by one delete.
	for deadline := time.Now().Add(time.Minute); ; {
		ds, err := b.members.Directives(ctx, "e")
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) == 1 && ds[0].Kind == operator.DirectiveDrain {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the leader never deleted the requests of ended terms: %+v", ds)
		}
		time.Sleep(10 * time.Millisecond)
	}
	deletes := 0
	for _, c := range rec.take() {
		if kindOf(c) == "delete" {
			deletes++
		}
	}
	if deletes != 1 {
		t.Fatalf("the requests of ended terms went by %d deletes; want one", deletes)
	}
	// A request of an ended term, landing late, is left (and ignored).
	if err := b.members.PutDirective(ctx, "e", operator.Directive{Kind: operator.DirectiveTransfer, Term: 1, Gen: 3, Member: "x"}); err != nil {
		t.Fatal(err)
	}
	// Five heartbeats (status writes), however long a busy machine makes
	// them take; ten in the long form (DSYNC_LONG=1, as CI runs it): at
	// the 2 s interval each heartbeat is 2 s of the README's command.
	heartbeats := 5
	if longtest.Enabled() {
		heartbeats = 10
	}
	counts := map[string]int{}
	for deadline := time.Now().Add(3 * time.Minute); counts["status"] < heartbeats; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d status writes in three minutes, want %d", counts["status"], heartbeats)
		}
		for _, c := range rec.take() {
			counts[kindOf(c)]++
		}
	}
	mine := "find e/#transfer/" + strconv.FormatUint(info.Token, 10)
	statusWrites, finds := counts["status"], counts[mine]
	delete(counts, "status")
	delete(counts, mine)
	t.Logf("over %d heartbeats (status writes): %d finds of the term's requests, other commands %v", statusWrites, finds, counts)
	// At most one find a heartbeat; fewer when a heartbeat's time ran
	// out in its status write (a busy machine), and one more or less at
	// the window's ends.
	if finds < statusWrites/2 || finds > statusWrites+1 || len(counts) != 0 {
		t.Errorf("over %d heartbeats: %d finds from %q and other commands %v; want one find a heartbeat and nothing else", statusWrites, finds, mine, counts)
	}
	ds, err := b.members.Directives(ctx, "e")
	if err != nil || len(ds) != 2 {
		t.Fatalf("directives %+v, %v; want the drain and the late request", ds, err)
	}
}
