package leadermongo_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/clienthook"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
	"github.com/go-dsync/dsync/leader"
	leadermongo "github.com/go-dsync/dsync/leader/mongo"
)

// TestAbandonedMemberWriteLosesToTheNext: a member write whose caller gave
// up on it mid-flight may still be applied by the server, while the
// member's next write is applied too. FerretDB applies an update as a read
// and a later write of the whole document, so if both were updates of one
// document the older could land last and bring back its state. Once both
// have settled, the member must show the later write's state, in Members
// and, for the member that leads, in Leader. (With one document per
// member, updated by an upsert, 17 to 27 of the 120 rounds read the older
// state, in every one of 10 runs.)
func TestAbandonedMemberWriteLosesToTheNext(t *testing.T) {
	const election, nMembers, rounds = "abandoned", 8, 15
	db := mongotest.NewDatabase(t)
	b := newLeaderBackend(t, db)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	// One member leads, so that Leader reads its status too.
	mu, err := dsync.NewMutex(b.c, election, clienthook.Elections.(dsync.Option))
	if err != nil {
		t.Fatal(err)
	}
	if err := mu.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := mu.UnlockContext(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	// A watcher reads who leads, and the leader's status.
	watcher := elect(t, b, election)
	defer watcher.Close()
	ids := []string{clienthook.OwnerOf(mu)}
	for i := 1; i < nMembers; i++ {
		ids = append(ids, fmt.Sprintf("m%d", i))
	}

	// How long a member write takes here: the abandoned write is given up
	// after a random part of twice that, so that it is often cut off while
	// the server applies it.
	var took []time.Duration
	for i := range 9 {
		start := time.Now()
		if err := b.members.PutMember(ctx, election, leader.Member{ID: "calibrate", Version: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	typical := took[len(took)/2]
	settle := max(5*typical, 20*time.Millisecond)

	var abandoned, wrong atomic.Int32
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			for r := range rounds {
				old := leader.Member{ID: id, Host: "h", PID: 1, Version: fmt.Sprintf("old-%d", r), Leader: r%2 == 0}
				next := old
				next.Version, next.Leader = fmt.Sprintf("new-%d", r), !old.Leader

				actx, acancel := context.WithTimeout(ctx, rand.N(2*typical))
				if err := b.members.PutMember(actx, election, old); err != nil {
					abandoned.Add(1) // its outcome is unknown: it may still be applied
				}
				acancel()
				if err := b.members.PutMember(ctx, election, next); err != nil {
					t.Errorf("member %s, round %d: %v", id, r, err)
					return
				}
				time.Sleep(settle) // for the abandoned write to land, if it does

				ms, err := b.members.Members(ctx, election, time.Minute)
				if err != nil {
					t.Errorf("member %s, round %d: %v", id, r, err)
					return
				}
				wrongHere := false
				var got []leader.Member
				for _, m := range ms {
					if m.ID == id {
						got = append(got, m)
					}
				}
				if len(got) != 1 || got[0].Leader != next.Leader || got[0].Version != next.Version {
					wrongHere = true
					t.Errorf("member %s, round %d: Members lists %+v after the write of {Leader:%v Version:%s}; want that state, once",
						id, r, got, next.Leader, next.Version)
				}
				if id == clienthook.OwnerOf(mu) {
					info, err := watcher.Leader(ctx)
					if err != nil {
						t.Errorf("member %s, round %d: %v", id, r, err)
						return
					}
					if info.Version != next.Version {
						wrongHere = true
						t.Errorf("member %s, round %d: Leader reports version %q after the write of %q", id, r, info.Version, next.Version)
					}
				}
				if wrongHere {
					wrong.Add(1)
				}
			}
		})
	}
	wg.Wait()
	// The member's older generations are deleted once a write to the new
	// one is confirmed: one document each is left, two at most should a
	// delete fail at the end.
	for _, id := range ids {
		n, err := db.Collection(leadermongo.DefaultMembersCollection).CountDocuments(ctx, bson.D{{Key: "member", Value: id}})
		if err != nil {
			t.Fatal(err)
		}
		if n > 2 {
			t.Errorf("member %s has %d documents after %d rounds: its older generations are not deleted", id, n, rounds)
		}
	}
	t.Logf("a write takes %v here; %d of %d rounds abandoned their first write; %d rounds read an older state", typical, abandoned.Load(), nMembers*rounds, wrong.Load())
	if abandoned.Load() == 0 {
		t.Errorf("no write was abandoned: the test did not test anything")
	}
}
