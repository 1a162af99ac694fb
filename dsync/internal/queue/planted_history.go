package queue

// Planted errors of the store's histories (history.go), for the
// simulation's negative controls (see Bug), numbered apart from the
// others.
const (
	// BugHistoryIgnored relies on a gate whatever history of the store it
	// was sent in: a start or a refresh held back across an emptying makes
	// a segment of the history before look covered, and its tokens lie
	// below those handed out before the emptying.
	BugHistoryIgnored Bug = 96 + iota
	// BugStartWritesHistory has a start insert the protocol document
	// last, recording the history its gates record (as a start once
	// inserted it, with the span): a start held back across an emptying
	// then makes the next history look like the one before it.
	BugStartWritesHistory
	// BugClaimHistoryIgnored has a walk pass the claims of its segment
	// whatever history of the store they record: a process that kept
	// what it knew of a segment across an emptying joins the next
	// history's segment of the same number, holds in it, and relies on
	// the coverage it knew before (the store's gates may end sooner).
	BugClaimHistoryIgnored
)

// startDocs returns the documents a start inserts: its own (docs, the
// gates, its claim and the claim's shadow), and what a planted error of
// the store's histories adds (BugStartWritesHistory); and the index at
// which a duplicate means the start's own documents all landed (-1:
// none, as under the rule).
func (s *segments) startDocs(docs []Doc, history string) ([]Doc, int) {
	if !s.has(BugStartWritesHistory) {
		return docs, -1
	}
	// The protocol document last, recording the history the gates do: a
	// start held back across an emptying then begins the next history as
	// the one before it, and its segment is relied on in it.
	p := s.protocolDoc()
	p.Nonce = history
	return append(docs, p), len(docs)
}
