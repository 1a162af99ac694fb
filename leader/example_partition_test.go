package leader_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/leader/leadertest"
)

// Four shards of a mail queue spread over the processes that run this
// program (here one). Each shard consumes its own slice of the queue and
// sends through an outbox that refuses stale tokens: a process paused
// past its lease cannot send for a shard another process took over.
func ExamplePartition() {
	// In production: a Client over dsyncmongo.NewStore(db), and member
	// status in leadermongo.NewStore(store).
	client, err := dsync.NewClient(memory.New())
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	members := leadertest.NewMemoryMembers()

	const shards = 4
	p, err := leader.NewPartition(client, "mailer", shards, leader.WithMembers(members))
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close() // hands every shard over; runs before client.Close

	queue := newMailQueue(shards) // mail i goes to shard i % shards
	for i := range 8 {
		queue.push(i, fmt.Sprintf("mail-%d", i))
	}
	out := newOutbox()

	ctx, cancel := context.WithCancel(context.Background()) // signal.NotifyContext in a real program
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return p.Run(gctx, func(ctx context.Context, shard int) error {
			term, _ := leader.TermOf(ctx) // this shard's term; its token fences the sends
			for {
				mail, err := queue.next(ctx, shard)
				if err != nil {
					return err // the shard was handed over, or Run ends
				}
				err = out.send(shard, term.Token, mail)
				if errors.Is(err, errStaleToken) {
					return nil // this term is over: another member owns the shard
				}
				if err != nil {
					return err // ends Run, and the group
				}
			}
		})
	})
	g.Go(func() error {
		out.waitFor(8) // a real program runs until it is stopped
		cancel()
		return nil
	})
	if err := g.Wait(); !errors.Is(err, context.Canceled) {
		log.Fatal(err)
	}
	for shard := range shards {
		fmt.Printf("shard %d sent %v\n", shard, out.sent[shard])
	}
	// Output:
	// shard 0 sent [mail-0 mail-4]
	// shard 1 sent [mail-1 mail-5]
	// shard 2 sent [mail-2 mail-6]
	// shard 3 sent [mail-3 mail-7]
}

// mailQueue stands for a queue that each shard reads its own slice of
// (a topic partition, rows WHERE id % shards = shard). A real one would
// delete a mail only once it was sent, so that a mail taken by a member
// that lost its shard before sending is taken again by the next owner.
type mailQueue struct{ shards []chan string }

func newMailQueue(shards int) *mailQueue {
	q := &mailQueue{}
	for range shards {
		q.shards = append(q.shards, make(chan string, 100))
	}
	return q
}

func (q *mailQueue) push(id int, mail string) { q.shards[id%len(q.shards)] <- mail }

// next returns the shard's next mail, waiting for one while ctx lives.
func (q *mailQueue) next(ctx context.Context, shard int) (string, error) {
	select {
	case mail := <-q.shards[shard]:
		return mail, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

var errStaleToken = errors.New("outbox: a later owner of the shard has sent")

// outbox stands for the fenced resource: it keeps the highest token it
// has seen per shard and refuses a lower one (README: "Fencing what a
// holder writes"; in MongoDB, fencemongo.Fence does this per document).
type outbox struct {
	mu      sync.Mutex
	changed *sync.Cond
	highest map[int]uint64
	sent    map[int][]string
	total   int
}

func newOutbox() *outbox {
	o := &outbox{highest: map[int]uint64{}, sent: map[int][]string{}}
	o.changed = sync.NewCond(&o.mu)
	return o
}

func (o *outbox) send(shard int, token uint64, mail string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if token < o.highest[shard] {
		return errStaleToken
	}
	o.highest[shard] = token
	o.sent[shard] = append(o.sent[shard], mail)
	o.total++
	o.changed.Broadcast()
	return nil
}

// waitFor waits until n mails were sent.
func (o *outbox) waitFor(n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for o.total < n {
		o.changed.Wait()
	}
}
