package leadermongo_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/go-dsync/dsync/internal/testbed/mongotest"
	"github.com/go-dsync/dsync/leader"
	leadermongo "github.com/go-dsync/dsync/leader/mongo"
)

// TestLegacyCandidateRefusesTheCampaign: while a claim of an older
// release's lease (its own collection) has not ended and its session has
// not expired, Campaign fails at once with ErrLegacyCandidate, a refusal
// (leader.ErrRefused) rather than a store failure to retry; once the
// claim has ended, the candidate leads.
func TestLegacyCandidateRefusesTheCampaign(t *testing.T) {
	db := mongotest.NewDatabase(t)
	ctx := context.Background()
	claims, sessions := db.Collection(leadermongo.LegacyCollection), db.Collection(leadermongo.LegacyCollection+"_sessions")
	if _, err := claims.InsertOne(ctx, bson.D{{Key: "_id", Value: "leader/cron@5"}, {Key: "key", Value: "leader/cron"}, {Key: "kind", Value: "claim"}, {Key: "epoch", Value: int64(5)}, {Key: "nonce", Value: "n1"}, {Key: "session", Value: "s1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := sessions.InsertOne(ctx, bson.D{{Key: "_id", Value: "s1"}, {Key: "expiresAt", Value: time.Now().Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	b := newElections(t, db)
	e, err := leader.NewElection(b.c, "cron", leader.WithMembers(b.members), leader.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := e.Campaign(cctx); !errors.Is(err, leadermongo.ErrLegacyCandidate) || !errors.Is(err, leader.ErrRefused) {
		t.Fatalf("Campaign beside a live legacy candidate = %v, want ErrLegacyCandidate, a refusal", err)
	}
	if _, err := claims.InsertOne(ctx, bson.D{{Key: "_id", Value: "leader/cron@5~n1"}, {Key: "key", Value: "leader/cron"}, {Key: "kind", Value: "release"}, {Key: "epoch", Value: int64(5)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Campaign(cctx); err != nil {
		t.Fatalf("Campaign once the legacy claim ended = %v", err)
	}
}
