package dsync

import "github.com/go-dsync/dsync/dsync/internal/queue"

// The terms a primitive claims its key with: how the claim shares the key
// (the engine's grant rule, dsync/internal/queue/grant.go). The primitives ask
// for them by these names and never name the engine's types.

// claimTerms is how a claim shares its key.
type claimTerms = queue.Terms

// exclusive are the terms of a claim that shares its key with no other:
// a Mutex's, a writer's, a Once's, an election's lease.
func exclusive() claimTerms { return queue.ExclusiveTerms }

// shared are the terms of a reader's claim: readers share the key.
func shared() claimTerms { return queue.Terms{Mode: queue.Shared} }

// weighted are the terms of a semaphore's claim of n units of limit.
func weighted(n, limit int64) claimTerms {
	return queue.Terms{Mode: queue.Weighted, Weight: n, Limit: limit}
}

// isShared reports whether t are a reader's terms.
func isShared(t claimTerms) bool { return t.Mode == queue.Shared }

// isExclusive reports whether t share the key with no other claim.
func isExclusive(t claimTerms) bool { return t.Mode == queue.Exclusive }

// isWeighted reports whether t are a semaphore's terms.
func isWeighted(t claimTerms) bool { return t.Mode == queue.Weighted }
