package hint_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/hint"
)

// events is a driver.FeedHandler that passes on the events it is told,
// dropping those it has no room for: a handler must not block its feed.
type events chan driver.Event

func (events) Live(uint64)      {}
func (events) Down(error, bool) {}
func (c events) Event(e driver.Event) {
	select {
	case c <- e:
	default:
	}
}

// Two processes on one store, each with a Feed on loopback: a waiter's
// announcement reaches the owner of the claim it waits for as a direct
// hint. (dsync.ClientWithHints builds such a Feed for a Client.)
func ExampleFeed() {
	store := memory.New() // its Roles record peers, as MongoDB's do
	follow := func(h driver.FeedHandler) (*hint.Feed, func()) {
		f, err := hint.New(store, nil, hint.Config{Listen: "127.0.0.1:0"})
		if err != nil {
			log.Fatal(err)
		}
		return f, f.Follow(h)
	}
	toOwner := make(events, 16)
	_, stopOwner := follow(toOwner)
	defer stopOwner()
	waiter, stopWaiter := follow(make(events, 16))
	defer stopWaiter()

	// Publish fails until the waiter has read the hint key and learnt of
	// the owner from the store: try again until a hint goes out.
	announce := driver.Event{Kind: driver.Waiting, Key: "migrations", Epoch: 4, Until: store.ServerTime().Latest.Add(time.Minute), Proc: "waiter"}
	for waiter.Publish(context.Background(), announce) != nil {
		time.Sleep(time.Millisecond)
	}
	select {
	case e := <-toOwner:
		fmt.Println("the owner heard:", e.Key, e.Epoch, e.Kind == driver.Waiting)
	case <-time.After(30 * time.Second):
		log.Fatal("no hint came")
	}
	// Output:
	// the owner heard: migrations 4 true
}
