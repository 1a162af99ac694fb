// Package readahead reads what each key of a listing needs, a few keys
// ahead of the listing's caller, so that a page of keys costs about the
// round trips of a few of them, not of all (statuspage.Reader.List).
package readahead

import (
	"context"
	"iter"
)

// Item is a key of a listing and what was read for it.
type Item[T any] struct {
	Key string
	Val T
}

// aRead is one key whose read is under way: done closes when it and err
// are set.
type aRead[T any] struct {
	it   Item[T]
	err  error
	done chan struct{}
}

// Seq yields the keys keys lists, in its order, each once with what read
// returned for it, running read for up to n keys at once (n-2 waiting in
// a channel, one the caller waits for, one waiting to be sent; n is at
// least 3). An error of the listing ends the sequence, yielded as
// listErr(err) with the zero Item; an error of read ends it too, yielded
// with its key. Stopping the loop cancels the reads under way and waits
// for them: nothing of a listing outlives its loop. keys is called with
// a context that ends with the loop.
func Seq[T any](ctx context.Context, n int, keys func(context.Context) iter.Seq2[string, error],
	read func(context.Context, string) (T, error), listErr func(error) error) iter.Seq2[Item[T], error] {
	return func(yield func(Item[T], error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		ahead := start(ctx, n, keys(ctx), read, listErr)
		defer func() {
			cancel()
			for r := range ahead {
				<-r.done
			}
		}()
		for r := range ahead {
			<-r.done
			if !yield(r.it, r.err) || r.err != nil {
				return
			}
		}
	}
}

// start lists keys and starts each one's read as it comes, to a caller
// who receives them in order. The channel closes after the last key,
// after an error of the listing (its read, last), or when ctx ends.
func start[T any](ctx context.Context, n int, keys iter.Seq2[string, error],
	read func(context.Context, string) (T, error), listErr func(error) error) <-chan *aRead[T] {
	ahead := make(chan *aRead[T], n-2)
	go func() {
		defer close(ahead)
		for key, err := range keys {
			r := &aRead[T]{it: Item[T]{Key: key}, done: make(chan struct{})}
			if err != nil {
				r.it, r.err = Item[T]{}, listErr(err)
				close(r.done)
			} else {
				go func() {
					defer close(r.done)
					r.it.Val, r.err = read(ctx, key)
				}()
			}
			select {
			case ahead <- r:
			case <-ctx.Done():
				<-r.done
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return ahead
}
