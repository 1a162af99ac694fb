package hint

import (
	"context"
	"crypto/rand"
	"log/slog"
	"net"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// keepRecord reads the hint key, records this process in the store and
// reads the others' records, until ctx ends: at once (retrying at
// doubling intervals until it succeeds), then every refreshEvery; but
// while hints reach this process (pause.go), it only writes its record
// again every putEvery, and reads the key and the others' records every
// fullEvery: a hint that passed its MAC shows that the key it holds is
// the one the others use, and a process that starts reads our record and
// says hello (a hint from it records it too). So a process whose waiters
// hints reach costs the store a command a minute or so for its record,
// not three every 30 s. After each round it says hello to every process
// it knows, so that they send to this one without waiting for their
// next read (the first time), and answer it (pause.go).
func (f *Feed) keepRecord(ctx context.Context) {
	wait, first := time.Duration(0), true
	var lastFull, lastPut time.Duration
	for {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		now := f.mono()
		var err error
		switch {
		case first || !f.reached() || now-lastFull >= f.every.full:
			if err = f.refresh(ctx); err == nil {
				lastFull, lastPut = now, now
			}
		case now-lastPut >= f.every.put:
			if err = f.putRecord(ctx); err == nil {
				lastPut = now
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			f.cfg.Logger.Debug("dsync: recording this process for hints failed", slog.Any("err", err))
			wait = min(max(2*wait, retryFirst), f.every.refresh)
			continue
		}
		// Hello after every round, not only the first: the others'
		// answers tell this process that hints still reach it (pause.go).
		f.hello()
		if first {
			first = false
			f.setReady()
		}
		wait = f.every.refresh
	}
}

// putRecord writes this process's record again.
func (f *Feed) putRecord(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, refreshEvery/2)
	defer cancel()
	if err := f.store.Prepare(ctx); err != nil {
		return err
	}
	f.mu.Lock()
	adv := f.advertise
	f.mu.Unlock()
	return f.peers.PutPeer(ctx, driver.Peer{ID: f.id, Addr: adv, ExpiresAt: f.store.ServerTime().Earliest.Add(recordFor)})
}

// refresh does a whole round of keepRecord: the key (it may have been
// replaced, if the store was emptied), this process's record, the
// others'.
func (f *Feed) refresh(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, refreshEvery/2)
	defer cancel()
	if err := f.store.Prepare(ctx); err != nil {
		return err
	}
	candidate := make([]byte, 32)
	_, _ = rand.Read(candidate)
	key, err := f.peers.HintKey(ctx, candidate)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.key = key
	adv := f.advertise
	f.mu.Unlock()
	now := f.store.ServerTime()
	if err := f.peers.PutPeer(ctx, driver.Peer{ID: f.id, Addr: adv, ExpiresAt: now.Earliest.Add(recordFor)}); err != nil {
		return err
	}
	ps, err := f.peers.Peers(ctx, now.Latest)
	if err != nil {
		return err
	}
	seen := make(map[string]peer, len(ps))
	for _, p := range ps {
		if p.ID == f.id {
			continue
		}
		ua, err := net.ResolveUDPAddr("udp", p.Addr)
		if err != nil {
			continue
		}
		seen[p.ID] = peer{addr: ua, expires: p.ExpiresAt}
	}
	f.mu.Lock()
	var learnt []dest
	for id, p := range seen {
		if !f.knowsLocked(id, now.Earliest) {
			learnt = append(learnt, dest{id, p.addr})
		}
	}
	// Processes heard from directly since are kept as heard.
	for id, p := range f.peersByID {
		if _, ok := seen[id]; !ok && p.expires.After(now.Earliest) {
			seen[id] = p
		}
	}
	f.peersByID = seen
	f.mu.Unlock()
	f.greet(learnt)
	return nil
}

// hello tells every process recorded that this one takes hints.
func (f *Feed) hello() {
	now := f.store.ServerTime().Earliest
	f.mu.Lock()
	to := f.peerDestsLocked(now)
	f.mu.Unlock()
	f.sendTo(msg{kind: kindHello}, to)
}
