package main

import (
	"context"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/lockset"
)

// LockSet locks keys as one lockset.Set of the Mutexes of the Client of
// a lease of ttl. The Mutexes are made once per key and kept: a
// process's sets are taken one at a time, and a Mutex made anew for
// every set would be a cost no user pays.
func (c *conn) LockSet(ctx context.Context, keys []string, ttl time.Duration) ([]uint64, func(context.Context) error, error) {
	l, err := c.lease(ttl)
	if err != nil {
		return nil, nil, err
	}
	members := make([]lockset.Member, len(keys))
	for i, k := range keys {
		m, err := c.setMutex(l, k)
		if err != nil {
			return nil, nil, err
		}
		members[i] = lockset.Mutex(m)
	}
	s, err := lockset.New(l.c, members)
	if err != nil {
		return nil, nil, err
	}
	if err := s.LockContext(ctx); err != nil {
		return nil, nil, err
	}
	return s.Tokens(), s.UnlockContext, nil
}

// setMutex returns l's Mutex of key for lock sets, making it.
func (c *conn) setMutex(l *lease, key string) (*dsync.Mutex, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := l.setMutexes[key]; m != nil {
		return m, nil
	}
	m, err := dsync.NewMutex(l.c, key)
	if err != nil {
		return nil, err
	}
	if l.setMutexes == nil {
		l.setMutexes = map[string]*dsync.Mutex{}
	}
	l.setMutexes[key] = m
	return m, nil
}

// Token is the fencing token of the Mutex's hold.
func (m mutex) Token() uint64 { return m.m.Token() }
