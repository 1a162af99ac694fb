package statuspage

import (
	"github.com/go-dsync/dsync/leader/operator"
	"slices"
	"time"
)

// Stream makes the Records of one read of the store (Reader.Walk), as the
// page fills them in. The page gathers them into its Snapshot, and the
// dsync command's `status --json` prints them, so that the two say the
// same thing alike.
//
// The sink emits the Record of each lock and election at once, but for the
// elections that are a partition's shards. end emits the partitions whose
// shards were read, each with its drained members as drained reads them
// (nil: none), then the revocations, newest first, then the stall records,
// newest first, each with the Kind and Name of its Key (KindOf), then the
// waits of lock sets among the locks read (sets.WaitsOf, in the locks'
// order) and sets' deadlocks broken, newest first (sets nil: none), then
// the outages ridden through, newest first. A
// claim of a session in revocations is marked Revoked. The
// fields only a caller knows (a Claim's and a Leader's CommandPID, the
// Summary) are the caller's to fill in. An error of emit or drained is
// returned as it is.
func Stream(revocations []Revocation, stalls []Stall, sets *SetRecords, outages []Outage, drained func(partition string) ([]DrainedMember, error), emit func(Record) error) (sink Sink, end func() error) {
	s := &stream{emit: emit, drained: drained, revoked: make(map[string]bool, len(revocations)), sets: sets}
	s.outages = slices.Clone(outages)
	slices.SortFunc(s.outages, func(a, b Outage) int { return b.At.Compare(a.At) }) // newest first
	for _, r := range revocations {
		s.revoked[r.Session] = true
	}
	s.revocations = slices.Clone(revocations)
	slices.SortFunc(s.revocations, func(a, b Revocation) int { return b.At.Compare(a.At) }) // newest first
	s.stalls = slices.Clone(stalls)
	for i := range s.stalls {
		s.stalls[i].Kind, s.stalls[i].Name = KindOf(s.stalls[i].Key)
	}
	slices.SortFunc(s.stalls, func(a, b Stall) int { return b.At.Compare(a.At) }) // newest first
	return s, s.end
}

// A stream is the sink of Stream.
type stream struct {
	emit        func(Record) error
	drained     func(partition string) ([]DrainedMember, error) // nil: none
	revocations []Revocation                                    // newest first
	revoked     map[string]bool                                 // their sessions
	stalls      []Stall                                         // newest first
	shards      ShardSet[Election]
	sets        *SetRecords // nil: none read
	waits       []SetWait   // of the locks emitted
	outages     []Outage    // newest first
}

func (s *stream) Lock(rl LockState) error {
	if s.sets != nil {
		s.waits = append(s.waits, s.sets.WaitsOf(rl)...)
	}
	l := lockOf(rl, s.revoked)
	return s.emit(Record{Lock: &l})
}

func (s *stream) Election(re ElectionState) error {
	e := electionOf(re)
	if s.shards.Add(e.Name, e) {
		return nil // in its partition's Record, at the end
	}
	return s.emit(Record{Election: &e})
}

func (s *stream) end() error {
	for _, p := range partitionsOf(&s.shards) {
		if s.drained != nil {
			ds, err := s.drained(p.Name)
			if err != nil {
				return err
			}
			p.Drained = append(p.Drained, ds...)
		}
		if err := s.emit(Record{Partition: &p}); err != nil {
			return err
		}
	}
	for _, r := range s.revocations {
		if err := s.emit(Record{Revocation: &r}); err != nil {
			return err
		}
	}
	for _, st := range s.stalls {
		if err := s.emit(Record{Stall: &st}); err != nil {
			return err
		}
	}
	if err := s.endSets(); err != nil {
		return err
	}
	for _, o := range s.outages {
		if err := s.emit(Record{Outage: &o}); err != nil {
			return err
		}
	}
	return nil
}

// endSets emits the lock sets' waits and deadlocks.
func (s *stream) endSets() error {
	if s.sets == nil {
		return nil
	}
	for _, w := range s.waits {
		if err := s.emit(Record{SetWait: &w}); err != nil {
			return err
		}
	}
	for _, d := range s.sets.Deadlocks {
		if err := s.emit(Record{Deadlock: &d}); err != nil {
			return err
		}
	}
	return nil
}

// lockOf is rl as the schema shows it, marking the claims of the
// revoked sessions.
func lockOf(rl LockState, revoked map[string]bool) Lock {
	l := Lock{Key: rl.Key, Kind: rl.Kind, Name: rl.Name, State: rl.State(), Holders: []Claim{}, Waiting: []Claim{}}
	for _, c := range rl.Holders {
		l.Holders = append(l.Holders, claimOf(c, rl.Now, revoked))
	}
	for _, c := range rl.Waiting {
		l.Waiting = append(l.Waiting, claimOf(c, rl.Now, revoked))
	}
	return l
}

func claimOf(c ClaimInfo, now time.Time, revoked map[string]bool) Claim {
	return Claim{
		Token: c.Token, Owner: c.Owner, Host: c.Host, PID: c.PID,
		Mode: c.Mode.String(), Weight: c.Weight, Limit: c.Limit,
		QueuedAt: c.QueuedAt, ExpiresAt: c.ExpiresAt, HeldForMS: millis(c.QueuedAt, now), ExpiresInMS: millis(now, c.ExpiresAt),
		Session: c.Session, Revoked: revoked[c.Session], Set: c.Set,
	}
}

// electionOf is re as the schema shows it.
func electionOf(re ElectionState) Election {
	now := re.Now
	e := Election{Name: re.Name, Key: operator.LockKey(re.Name), Members: []Member{}}
	if info := re.Leader; info != nil {
		e.Leader = &Leader{ID: info.ID, Host: info.Host, PID: info.PID, Version: info.Version, Value: info.Value,
			Term: info.Token, Since: info.Since, HeldForMS: millis(info.Since, now)}
		if c := re.Lease; c != nil {
			e.Leader.ExpiresAt, e.Leader.ExpiresInMS = c.ExpiresAt, millis(now, c.ExpiresAt)
		}
	}
	for _, m := range re.Members {
		e.Members = append(e.Members, Member{ID: m.ID, Host: m.Host, PID: m.PID, Version: m.Version, Priority: m.Priority,
			Leader: e.Leader != nil && m.ID == e.Leader.ID, LastSeen: m.LastSeen, LastSeenMS: millis(m.LastSeen, now)})
	}
	return e
}

// partitionsOf returns the partitions among set's shards.
func partitionsOf(set *ShardSet[Election]) []Partition {
	ps := []Partition{}
	for _, p := range set.Partitions() {
		sp := Partition{Name: p.Name, Shards: []Shard{}, Drained: []DrainedMember{}}
		for _, sh := range p.Shards {
			sp.Shards = append(sp.Shards, Shard{Shard: sh.Index, Election: sh.Of.Name, Key: sh.Of.Key, Owner: sh.Of.Leader})
		}
		ps = append(ps, sp)
	}
	return ps
}

// millis is the whole milliseconds from a to b: 0 if b is not after a.
func millis(a, b time.Time) int64 { return max(0, b.Sub(a).Milliseconds()) }
