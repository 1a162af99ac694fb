package dsync

// Why a primitive's hold was lost, in the style of context.Context.Err:
// nil while the holds are valid, the cause once Lost() has closed for
// one of them. The cause wraps ErrLost, and beside it what ended the
// hold: ErrRevoked (an operator revoked its session), ErrStalled (no
// progress within the progress deadline), ErrClosed (the Client was
// closed), ErrSuspended (its session was suspended in an outage of the
// store: ClientWithOutageGrace), or nothing more (its lease could not be
// confirmed in time).

// Err returns why m's hold was lost. It returns nil while m holds and its
// hold is valid. Once Lost() has closed for the hold, it returns an error
// wrapping ErrLost, with ErrStalled, ErrRevoked, ErrClosed or ErrSuspended beside it when
// the loss had that cause. When m is not held, it returns why its last hold
// was lost before its Unlock, or nil if that hold ended with a valid Unlock
// or m never held. The next hold makes it nil again.
func (m *Mutex) Err() error {
	m.mustBeMade()
	m.mu.Lock()
	h, held := m.last, m.hold != nil
	m.mu.Unlock()
	if h == nil {
		return nil
	}
	if held {
		h.expireIfDue() // the timer may not have run yet after a pause
	}
	return h.err()
}

// Err returns why a hold of rw was lost, as Mutex.Err does. It returns nil
// while every hold of rw, read or write, is valid. Once Lost() has closed,
// it returns the cause of the first hold lost. When rw holds nothing, it
// returns why the first of its last holds was lost (those held since it
// last held nothing), or nil if none was.
func (rw *RWMutex) Err() error {
	rw.mustBeMade()
	return rw.holds.lossErr()
}

// Err returns why an acquisition of s was lost, as Mutex.Err does. It
// returns nil while every acquisition of s is valid. Once Lost() has
// closed, it returns the cause of the first one lost. When s holds nothing,
// it returns why the first of its last acquisitions was lost (those held
// since it last held nothing), or nil if none was.
func (s *Semaphore) Err() error {
	s.mustBeMade()
	return s.holds.lossErr()
}
