package leader

import (
	"errors"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/leader/internal/lease"
)

// Sentinel errors, and the causes of a leadership context's cancellation.
// Match them with errors.Is, or compare context.Cause(ctx) with ==.
var (
	// ErrLeadershipLost is the cause of a leadership context cancelled
	// because the lease could no longer be guaranteed: at the lease's local
	// deadline, even when the store cannot be reached.
	ErrLeadershipLost = errors.New("leader: leadership lost")

	// ErrStalled is the cause of a leadership context (a term's, or a
	// Partition shard's) cancelled because its work reported no progress
	// (Progress) within its deadline (WithProgressDeadline): the lease was released so that another
	// candidate leads, and the stuck work's writes are fenced by the
	// term's token. It is dsync.ErrStalled, the same value.
	ErrStalled = dsync.ErrStalled

	// ErrResigned is the cause of a leadership context cancelled by Resign
	// or Close, and of a Partition shard's context when its member leaves
	// by Resign or Close.
	ErrResigned = errors.New("leader: resigned")

	// ErrShardMoved is the cause of a Partition shard's context cancelled
	// because the shard is handed over to the member it is now assigned
	// to (a member joined, left or changed weight).
	ErrShardMoved = errors.New("leader: shard moved to another member")

	// ErrNoLeader is returned by Leader when nobody leads.
	ErrNoLeader = lease.ErrNoLeader

	// ErrCampaigning is returned by Campaign when the Election is already
	// campaigning or leading: one Election is one candidate.
	ErrCampaigning = errors.New("leader: already campaigning or leading")

	// ErrRefused is wrapped by a Preflighter's refusal of a candidate
	// (leadermongo.ErrLegacyCandidate): Campaign fails with it rather
	// than wait.
	ErrRefused = errors.New("leader: this candidate may not campaign")

	// ErrClosed is returned by the methods of a closed Election or
	// Partition. It is dsync.ErrClosed, the same value, so one errors.Is
	// check matches a closed Client too.
	ErrClosed = dsync.ErrClosed

	// ErrNotLeader is returned by Proclaim when this candidate does not
	// lead, or its term ended before the value was confirmed, and by
	// Transfer when it does not lead, or its term ended another way.
	ErrNotLeader = errors.New("leader: not the leader")

	// ErrNoMembers is returned by Members, Proclaim and Transfer of an
	// Election given no MemberStore (WithMembers): member status has
	// nowhere to live.
	ErrNoMembers = errors.New("leader: no member store (WithMembers)")
)
