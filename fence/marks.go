package fence

import (
	"context"
	"sync"
)

// A Marks keeps the contract for writes that cannot join the mark's
// transaction.
//
// Such are the writes of an HTTP handler (fence/fencehttp) that writes
// files, calls another service or keeps state in memory. A Marks keeps
// each key's mark and admits one writer of a key at a time. So a raise
// and the write after it are one step to every other writer of the key.
//
// Implementations: Memory, for a single process; fencesql.Marks, for
// several instances of a service that share a SQL database.
type Marks interface {
	// Admit raises key's mark to token, or returns an error matching
	// ErrStale if the mark is above token (and then changes nothing). On
	// success, every other Admit of key waits until release is called:
	// the caller writes in between, then calls release exactly once. ctx
	// bounds the wait for the key and the store's I/O, not the time
	// between Admit and release. An error that matches neither ErrStale
	// nor ErrBadKey or ErrBadToken (an unreachable store) says nothing of
	// the mark: the caller must not write.
	Admit(ctx context.Context, key string, token uint64) (release func(), err error)
}

// Memory is a Marks kept in this process's memory. It is for a service of
// one instance, and for tests. Its marks are lost when the process ends. A
// service that restarts accepts a stale token until a later one raises the
// mark again. So a service whose restart may come between two holders'
// writes keeps its marks in a database (fencesql.Marks). A Memory keeps a
// mark for every key ever admitted. The zero Memory is ready to use. A
// Memory must not be copied after first use.
type Memory struct {
	mu   sync.Mutex
	keys map[string]*memoryKey
}

// memoryKey is one key's mark, and the turn of the writer admitted: a
// channel of capacity 1, full while a writer is admitted.
type memoryKey struct {
	turn chan struct{}
	mark uint64 // guarded by turn
}

// Admit implements Marks.
func (m *Memory) Admit(ctx context.Context, key string, token uint64) (func(), error) {
	if err := Check(key, token); err != nil {
		return nil, err
	}
	k := m.key(key)
	select {
	case k.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	if k.mark > token {
		mark := k.mark
		<-k.turn
		return nil, &StaleError{Key: key, Token: token, Mark: mark}
	}
	k.mark = token
	var once sync.Once
	return func() { once.Do(func() { <-k.turn }) }, nil
}

// Mark returns key's mark: the highest token admitted, 0 if none. It
// waits while a writer of key is admitted.
func (m *Memory) Mark(key string) uint64 {
	k := m.key(key)
	k.turn <- struct{}{}
	defer func() { <-k.turn }()
	return k.mark
}

func (m *Memory) key(key string) *memoryKey {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.keys == nil {
		m.keys = make(map[string]*memoryKey)
	}
	k := m.keys[key]
	if k == nil {
		k = &memoryKey{turn: make(chan struct{}, 1)}
		m.keys[key] = k
	}
	return k
}
