package chain

// plantedStartDocs appends to a start's documents what a planted error of
// the store's histories adds (see Bug), and returns the index at which a
// duplicate means the start's own documents all landed (-1: none).
func (e *Engine) plantedStartDocs(docs []Doc, history string) ([]Doc, int) {
	if !e.has(BugStartWritesHistory) {
		return docs, -1
	}
	// The protocol document last, recording the history the gates do: a
	// start held back across an emptying then begins the next history as
	// the one before it, and its segment is relied on in it.
	p := e.protocolDoc()
	p.Nonce = history
	return append(docs, p), len(docs)
}
