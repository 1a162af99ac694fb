package statuspage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/statuspage"
)

// The page mounted under /dsync/ of a program's own mux, and its data
// read back: a Mutex held and a Semaphore with one of its three units
// taken. A real program puts the page behind its own authentication.
func ExampleNew() {
	client, err := dsync.NewClient(memory.New()) // in production, on MongoDB
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	mu, _ := dsync.NewMutex(client, "nightly-billing")
	mu.Lock()
	defer mu.Unlock()
	sem, _ := dsync.NewSemaphore(client, "encode", 3)
	if err := sem.Acquire(context.Background(), 1); err != nil {
		log.Fatal(err)
	}
	defer sem.Release(1)

	mux := http.NewServeMux()
	mux.Handle("/dsync/", http.StripPrefix("/dsync", statuspage.New(statuspage.Config{Client: client})))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	// The Client records its keys in the store in the background: read
	// until both are listed, as the page does every second.
	var snap statuspage.Snapshot
	for deadline := time.Now().Add(30 * time.Second); len(snap.Locks) < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			log.Fatalf("status.json lists %d locks", len(snap.Locks))
		}
		snap = statusJSON(srv.URL + "/dsync/status.json")
	}
	for _, l := range snap.Locks {
		fmt.Printf("%s %s: %s, %d holder(s)\n", l.Kind, l.Name, l.State, len(l.Holders))
	}
	// Output:
	// semaphore encode: 1/3, 1 holder(s)
	// mutex nightly-billing: held, 1 holder(s)
}

// statusJSON reads a Snapshot from status.json.
func statusJSON(url string) statuspage.Snapshot {
	resp, err := http.Get(url)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	var snap statuspage.Snapshot
	if err := json.NewDecoder(resp.Body).Decode(&snap); err != nil {
		log.Fatal(err)
	}
	return snap
}

// A page of the keys that begin with "report-", with who holds each, and
// the next page where the store can resume after a key.
func ExampleReader_List() {
	c, err := dsync.NewClient(memory.New()) // in production, over dsyncmongo.NewStore(db)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	ctx := context.Background()
	r := statuspage.NewReader(c)

	opts := statuspage.ListOptions{Prefix: "report-", Limit: 100}
	for {
		last, n := "", 0
		for k, err := range r.List(ctx, opts) {
			if err != nil {
				fmt.Println(err)
				return
			}
			if len(k.Queue) == 0 {
				fmt.Println(k.Key, "free")
			} else {
				fmt.Println(k.Key, "held by", k.Queue[0].Owner, "with token", k.Queue[0].Token, "and", len(k.Queue)-1, "waiting")
			}
			last, n = k.Key, n+1
		}
		if order, err := r.ListOrder(ctx); err != nil || order != statuspage.OrderBytes || n < opts.Limit {
			return // the end, or a store that streams instead (OrderFirstUse): list without a limit there
		}
		opts.After = last
	}
}
