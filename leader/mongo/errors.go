package leadermongo

import "errors"

// Errors of the member store. Match them with errors.Is.
var (
	// ErrLegacyCandidate is what Campaign returns (wrapped) while a
	// candidate of an older release holds or waits for the same election
	// (see WithLegacyCollection).
	ErrLegacyCandidate = errors.New("leadermongo: a candidate of an older dsync release holds or waits for this election; stop the older release's candidates before starting this one's")
)
