package leadermongo_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/dsync"
	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/leader"
	leadermongo "github.com/go-dsync/dsync/leader/mongo"
)

// warnings is a slog handler that sends each record at Warn or above, as
// its message and its "err" attribute, on a channel.
type warnings chan [2]string

func (w warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w warnings) WithAttrs([]slog.Attr) slog.Handler           { return w }
func (w warnings) WithGroup(string) slog.Handler                { return w }

func (w warnings) Handle(_ context.Context, r slog.Record) error {
	var err string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "err" {
			err = a.Value.String()
		}
		return true
	})
	select {
	case w <- [2]string{r.Message, err}:
	default:
	}
	return nil
}

// TestCampaignSaysTheServerCannotBeReached: a campaign, with a leadermongo
// member store, whose server cannot be reached (nothing listens on the
// loopback port; the driver's own server selection timeout is an hour)
// warns as a Lock of its Client would: within the bound of a Lock's first
// store call (the TTL less the margin; the test allows ten TTLs), naming
// the refused connection, not the member index or read that came first.
// Then it goes on campaigning until its context ends.
func TestCampaignSaysTheServerCannotBeReached(t *testing.T) {
	const ttl = 2 * time.Second
	client, err := mongo.Connect(options.Client().ApplyURI("mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=3600000"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = client.Disconnect(context.Background()) }()
	quiet := slog.New(slog.DiscardHandler)
	store, err := dsyncmongo.NewStore(client.Database("unreachable"), dsyncmongo.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	c, err := dsync.NewClient(store, dsync.ClientWithTTL(ttl), dsync.ClientWithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	members, err := leadermongo.NewStore(store)
	if err != nil {
		t.Fatal(err)
	}
	warned := make(warnings, 64)
	e, err := leader.NewElection(c, "scheduler", leader.WithMembers(members), leader.WithLogger(slog.New(warned)))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := e.Campaign(ctx)
		done <- err
	}()
	start := time.Now()
	bound := time.After(10 * ttl)
	for campaign := false; !campaign; {
		select {
		case w := <-warned:
			msg, err := w[0], w[1]
			t.Logf("warned after %v: %s: %s", time.Since(start).Round(time.Millisecond), msg, err)
			if strings.Contains(err, "index") || strings.Contains(err, "older releases") {
				t.Errorf("warning %q blames %q; want the server", msg, err)
			}
			if campaign = strings.HasPrefix(msg, "leader: campaign"); campaign && !strings.Contains(err, "connection refused") {
				t.Errorf("the campaign's warning says %q; want the refused connection", err)
			}
		case <-bound:
			cancel()
			<-done
			t.Fatalf("no warning of the campaign within %v", 10*ttl)
		}
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("Campaign = %v after its context was cancelled; want context.Canceled", err)
	}
}
