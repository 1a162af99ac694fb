package harness

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"
)

// setKey is the name of key number i of the lockset scenario: names that
// sort as their numbers do, so that the keys' order is the numbers'.
func setKey(i int) string { return fmt.Sprintf("set%03d", i) }

// setsCmd carries out "sets <way> <n> <seed> <keys> <bound ns> <start
// mono>": from the Mono time start, take n sets in way, one after
// another, each of 2 to 4 of keys keys drawn with seed, and let each go
// as soon as it is held. For each it says "set <called> <acquired>
// <released>" and each key's number and token, or "stuck <called>" and
// the keys' numbers if it was not held within bound (then given up);
// "setsdone <n>" at the end.
func (c *childClient) setsCmd(ctx context.Context, f []string) {
	if len(f) < 7 {
		c.out.say("error sets: want sets WAY N SEED KEYS BOUND START")
		return
	}
	way := f[1]
	var a [5]int64
	for i := range a {
		v, err := strconv.ParseInt(f[2+i], 10, 64)
		if err != nil {
			c.out.say("error sets:", err)
			return
		}
		a[i] = v
	}
	n, seed, keys, bound, start := int(a[0]), uint64(a[1]), int(a[2]), time.Duration(a[3]), a[4]
	lock, err := c.setLocker(way)
	if err != nil {
		c.out.say("error sets:", err)
		return
	}
	go func() {
		time.Sleep(time.Duration(start - Mono()))
		rng := rand.New(rand.NewPCG(seed, uint64(keys)))
		for range n {
			if !c.takeSet(ctx, lock, drawSet(rng, keys), bound) {
				return
			}
		}
		c.out.say("setsdone", n)
	}()
}

// drawSet returns 2 to 4 distinct key numbers below keys (all of them if
// fewer), in random order.
func drawSet(rng *rand.Rand, keys int) []int {
	size := min(setMinKeys+rng.IntN(setMaxKeys-setMinKeys+1), keys)
	return rng.Perm(keys)[:size]
}

// setLockFunc locks the keys named, all or nothing, and returns their
// tokens, in the order named, and the release of them all.
type setLockFunc func(ctx context.Context, names []string) ([]uint64, func(context.Context) error, error)

// takeSet takes the set of key numbers nums with lock, reports it, and
// lets it go; it returns false after reporting an error.
func (c *childClient) takeSet(ctx context.Context, lock setLockFunc, nums []int, bound time.Duration) bool {
	names := make([]string, len(nums))
	for i, k := range nums {
		names[i] = setKey(k)
	}
	bctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	called := Mono()
	tokens, unlock, err := lock(bctx, names)
	acquired := Mono()
	switch {
	case err != nil && bctx.Err() != nil && ctx.Err() == nil:
		words := []any{"stuck", called}
		for _, k := range nums {
			words = append(words, k)
		}
		c.out.say(words...)
		return true
	case err != nil:
		c.out.say("error lock:", err)
		return false
	}
	released := Mono()
	if err := unlock(ctx); err != nil {
		c.out.say("error unlock:", err)
		return false
	}
	words := []any{"set", called, acquired, released}
	for i, k := range nums {
		words = append(words, k, tokens[i])
	}
	c.out.say(words...)
	return true
}

// setLocker returns how this Client takes a set in way: as a lock set
// of its library, or by its Mutexes (made once per key, kept for the
// next sets), the keys sorted first.
func (c *childClient) setLocker(way string) (setLockFunc, error) {
	switch way {
	case setsAsSet:
		ls, ok := c.conn.(LockSets)
		if !ok {
			return nil, errors.New("no lock sets in this library")
		}
		return func(ctx context.Context, names []string) ([]uint64, func(context.Context) error, error) {
			return ls.LockSet(ctx, names, c.spec.TTL)
		}, nil
	case setsByMutexes:
		return c.lockInOrder, nil
	}
	return nil, fmt.Errorf("no way %q of taking sets", way)
}

// lockInOrder locks the Mutexes of names one by one in the keys' order,
// each to its end, and, if one fails, unlocks those held, last first.
func (c *childClient) lockInOrder(ctx context.Context, names []string) ([]uint64, func(context.Context) error, error) {
	sorted := slices.Sorted(slices.Values(names))
	var held []Locker
	unlock := func(ctx context.Context) error {
		var errs []error
		for i := len(held) - 1; i >= 0; i-- {
			errs = append(errs, held[i].Unlock(ctx))
		}
		return errors.Join(errs...)
	}
	tokenOf := map[string]uint64{}
	for _, name := range sorted {
		l, err := c.setMutex(name)
		if err == nil {
			err = l.Lock(ctx)
		}
		if err != nil {
			// Unlocks bounded on their own: ctx may be what ended.
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			return nil, nil, errors.Join(err, unlock(uctx))
		}
		held = append(held, l)
		tokenOf[name] = l.(Tokener).Token()
	}
	tokens := make([]uint64, len(names))
	for i, name := range names {
		tokens[i] = tokenOf[name]
	}
	return tokens, unlock, nil
}

// setMutex returns this Client's Mutex of key name, making it the first
// time; it must have fencing tokens (Tokener).
func (c *childClient) setMutex(name string) (Locker, error) {
	if l, ok := c.mutexes[name]; ok {
		return l, nil
	}
	l, err := c.conn.NewMutex(name, c.spec.TTL)
	if err != nil {
		return nil, err
	}
	if _, ok := l.(Tokener); !ok {
		return nil, errors.New("this library's Mutex has no fencing token")
	}
	if c.mutexes == nil {
		c.mutexes = map[string]Locker{}
	}
	c.mutexes[name] = l
	return l, nil
}
