package fencehttp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/fence"
	"github.com/go-dsync/dsync/fence/fencehttp"
)

// A file service fenced by the key of the file it writes, and two holds
// of the file's lock: the first holder, paused past its lease, sends its
// write after the second holder wrote, and is refused.
func Example() {
	// The service's side: one instance, so the marks are in its memory.
	var marks fence.Memory
	var mu sync.Mutex
	files := map[string]string{}
	write := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, _, _ := fencehttp.Token(r.Context())
		if r.URL.Path != "/files/"+key {
			http.Error(w, "the fence's key is not this file", http.StatusForbidden)
			return
		}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		mu.Lock()
		files[key] = string(b)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	srv := httptest.NewServer(fencehttp.Handler(&marks, write))
	defer srv.Close()

	// The holders' side.
	locks, err := dsync.NewClient(memory.New())
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close()
	lock, err := dsync.NewMutex(locks, "report")
	if err != nil {
		log.Fatal(err)
	}
	put := func(token uint64, text string) {
		client := &http.Client{Transport: &fencehttp.Transport{Key: "report", Token: token}}
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPut, srv.URL+"/files/report", strings.NewReader(text))
		if err != nil {
			log.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		defer resp.Body.Close()
		if err := fencehttp.Stale(resp); errors.Is(err, fence.ErrStale) {
			// err tells the token refused and the one accepted first.
			fmt.Println("refused: a later holder wrote, our hold has ended")
			return
		}
		fmt.Println(resp.Status)
	}

	lock.Lock()
	paused := lock.Token() // the first holder pauses here, past its lease
	lock.Unlock()

	lock.Lock() // the next holder
	put(lock.Token(), "second")
	lock.Unlock()

	put(paused, "first") // the first holder wakes
	mu.Lock()
	fmt.Println("report:", files["report"])
	mu.Unlock()
	// Output:
	// 204 No Content
	// refused: a later holder wrote, our hold has ended
	// report: second
}
