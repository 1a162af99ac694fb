package ferretserve

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestLongLogIsStartedOver: a data file's log that grew past walLimit,
// while a client keeps reading, is emptied within a few passes, and no
// document is lost. Without checkpointWAL, SQLite never shrinks the log
// file: it stays at the largest size it reached.
func TestLongLogIsStartedOver(t *testing.T) {
	// Restored after the server has stopped (cleanups run last first):
	// its indexer reads walLimit until then.
	l := walLimit
	t.Cleanup(func() { walLimit = l })
	walLimit = 1 << 20
	dir := t.TempDir()
	c := startClient(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	coll := c.Database("wal").Collection("c")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: -1}}); err != nil {
		t.Fatal(err)
	}

	// A reader that never pauses, as event cursors are.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			_ = coll.FindOne(ctx, bson.D{{Key: "_id", Value: -1}}).Err()
		}
	}()
	defer wg.Wait()
	defer cancel()

	wal := filepath.Join(dir, "wal.sqlite-wal")
	size := func() int64 {
		fi, err := os.Stat(wal)
		if err != nil {
			return 0
		}
		return fi.Size()
	}
	pad := strings.Repeat("x", 16<<10)
	const docs = 400 // 6.4 MB of documents, more in the log
	peak := int64(0)
	for i := range docs {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "pad", Value: pad}}); err != nil {
			t.Fatal(err)
		}
		peak = max(peak, size())
	}
	if peak < walLimit {
		t.Fatalf("the log reached %d bytes at most, not enough to test with (walLimit %d)", peak, walLimit)
	}
	deadline := time.Now().Add(100 * pollInterval)
	for size() >= walLimit && time.Now().Before(deadline) {
		time.Sleep(pollInterval / 2)
	}
	if got := size(); got >= walLimit {
		t.Fatalf("the log is %d bytes %v after the writes (peak %d), want less than %d", got, 100*pollInterval, peak, walLimit)
	}
	n, err := coll.CountDocuments(ctx, bson.D{})
	if err != nil || n != docs+1 {
		t.Fatalf("count after the checkpoints: %d, %v; want %d", n, err, docs+1)
	}
}

// TestWALBackoffDoubles: checkpoints that give up in a row wait longer
// and longer, up to walRetryMax.
func TestWALBackoffDoubles(t *testing.T) {
	want := []time.Duration{walRetry, 2 * walRetry, 4 * walRetry, 8 * walRetry}
	for i, w := range want {
		if got := walBackoff(i + 1); got != w {
			t.Errorf("walBackoff(%d) = %v, want %v", i+1, got, w)
		}
	}
	if got := walBackoff(1000); got != walRetryMax {
		t.Errorf("walBackoff(1000) = %v, want %v", got, walRetryMax)
	}
}
