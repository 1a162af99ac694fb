package dsyncmongo

import (
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/event"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// TestRecordStallWritesOnlyItsRecord: seen through the command monitor,
// a RecordStall sends one insert, of its record
// (#stall/<session>/<nonce>), and no update, findAndModify or delete;
// Stalls is one find.
func TestRecordStallWritesOnlyItsRecord(t *testing.T) {
	ctx := testCtx(t, 60*time.Second)
	var (
		mu   sync.Mutex
		sent []*event.CommandStartedEvent
	)
	c := &counter{onStart: func(e *event.CommandStartedEvent) {
		mu.Lock()
		sent = append(sent, e)
		mu.Unlock()
	}}
	st := newBackend(t, mongotest.NewDatabase(t, c.monitor())).s
	if err := st.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	take := func() []*event.CommandStartedEvent {
		mu.Lock()
		defer mu.Unlock()
		out := sent
		sent = nil
		return out
	}
	take()
	const session, nonce = "stalledsession000000", "stallednonce00000000"
	if err := st.Roles().Stalls.RecordStall(ctx, driver.Stall{Key: "k", Token: 3, Session: session, Nonce: nonce, At: st.ServerTime().Latest}); err != nil {
		t.Fatal(err)
	}
	var inserts int
	for _, e := range take() {
		switch e.CommandName {
		case "update", "findAndModify", "delete":
			t.Errorf("RecordStall sent %s %s; want no write but its record's insert", e.CommandName, e.Command)
		case "insert":
			inserts++
			if !strings.Contains(e.Command.String(), `"#stall/`+session+`/`+nonce+`"`) {
				t.Errorf("RecordStall inserted %s; want only its record", e.Command)
			}
		}
	}
	if inserts != 1 {
		t.Errorf("RecordStall sent %d inserts; want 1", inserts)
	}
	got, err := st.Roles().Stalls.Stalls(ctx)
	if err != nil || len(got) != 1 || got[0].Session != session || got[0].Nonce != nonce || got[0].Token != 3 {
		t.Errorf("Stalls = %+v, %v; want the one record", got, err)
	}
	if cmds := take(); len(cmds) != 1 || cmds[0].CommandName != "find" {
		names := make([]string, len(cmds))
		for i, e := range cmds {
			names[i] = e.CommandName
		}
		t.Errorf("Stalls sent %v; want one find", names)
	}
}
