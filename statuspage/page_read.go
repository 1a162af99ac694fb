package statuspage

import (
	"context"
	"time"
)

// What the page reads: the store through a Reader, as dsync status does,
// so that both show the same store alike.
// This file gathers what it reads into a Snapshot (schema.go), every time
// counted from the Snapshot's Now, from the Records that Stream
// (records.go) makes of it, as dsync status --json prints them. The
// Reader itself is reader.go and walk*.go.

// A query selects what one read shows.
type query struct {
	namespace, prefix, after string
	limit                    int
}

// keyPrefix is the stored-key prefix the query selects: a namespace NS
// is the keys "dsync:NS/..." (rw, sem, once, election, or one of
// dsync.WithNamespace).
func (q query) keyPrefix() string {
	if q.namespace == "" {
		return q.prefix
	}
	return "dsync:" + q.namespace + "/" + q.prefix
}

// read reads one page of the store that q selects.
func (h *handler) read(ctx context.Context, q query) Snapshot {
	empty := func(sum Summary) Snapshot {
		return Snapshot{Summary: sum, Locks: []Lock{}, Elections: []Election{}, Partitions: []Partition{}, Revocations: []Revocation{}, Stalls: []Stall{},
			SetWaits: []SetWait{}, Deadlocks: []Deadlock{}, Outages: []Outage{}}
	}
	s := empty(Summary{Namespace: q.namespace, Prefix: q.prefix, After: q.after})
	if err := h.readInto(ctx, q, &s); err != nil {
		return empty(Summary{Namespace: q.namespace, Prefix: q.prefix, After: q.after, Now: time.Now(), Clock: "local", Error: err.Error()})
	}
	return s
}

func (h *handler) readInto(ctx context.Context, q query, s *Snapshot) error {
	now, clock, err := h.now(ctx)
	if err != nil {
		return err
	}
	s.Now, s.Clock = now, clock
	r := NewReader(h.cfg.Client)
	r.Members, r.Seen, r.Now = h.cfg.Members, h.cfg.Seen, func() time.Time { return now }
	rs, err := r.Revocations(ctx)
	if err != nil {
		return err
	}
	stalls, err := r.Stalls(ctx)
	if err != nil {
		return err
	}
	sets, err := r.SetRecords(ctx, now.Add(-DeadlocksShown))
	if err != nil {
		return err
	}
	s.NoWaitNotes, s.NoDeadlockRecords = !sets.WaitsKept, !sets.DeadlocksKept
	outages, err := r.Outages(ctx, now.Add(-OutagesShown))
	if err != nil {
		return err
	}
	drained := func(partition string) ([]DrainedMember, error) { return r.Drained(ctx, partition) }
	sink, end := Stream(rs, stalls, &sets, outages, drained, s.add)
	listed, err := r.Walk(ctx, Selection{Prefix: q.keyPrefix(), After: q.after, Limit: q.limit}, sink)
	if err != nil {
		return err
	}
	s.Order, s.More, s.Next = listed.Order.String(), listed.More, listed.Next
	return end()
}

// add puts the lock, election, partition, revocation, stall, lock set's
// wait, deadlock or outage of r in s.
func (s *Snapshot) add(r Record) error {
	switch {
	case r.Lock != nil:
		s.Locks = append(s.Locks, *r.Lock)
	case r.Election != nil:
		s.Elections = append(s.Elections, *r.Election)
	case r.Partition != nil:
		s.Partitions = append(s.Partitions, *r.Partition)
	case r.Revocation != nil:
		s.Revocations = append(s.Revocations, *r.Revocation)
	case r.Stall != nil:
		s.Stalls = append(s.Stalls, *r.Stall)
	case r.SetWait != nil:
		s.SetWaits = append(s.SetWaits, *r.SetWait)
	case r.Deadlock != nil:
		s.Deadlocks = append(s.Deadlocks, *r.Deadlock)
	case r.Outage != nil:
		s.Outages = append(s.Outages, *r.Outage)
	}
	return nil
}

// now is the store's time (Config.Now), or the local time.
func (h *handler) now(ctx context.Context) (time.Time, string, error) {
	if h.cfg.Now == nil {
		return time.Now(), "local", nil
	}
	t, err := h.cfg.Now(ctx)
	return t, "store", err
}
