package history

// RegisterState is the final state of the register protected by a key.
type RegisterState struct {
	Key   string
	Final int64
	// Applied holds the ids of the writes the register applied, when it
	// can tell (the fenced register keeps every version); nil otherwise.
	Applied map[string]bool
}

// CheckWrites checks the writes recorded for st.Key against the
// register's final state, and adds what it finds to r: every
// acknowledged increment must be in the final value, and no other
// (zero lost updates), and acknowledged writes must have distinct values.
// Writes whose outcome is unknown (an error, or a worker killed
// mid-write) may or may not count.
func CheckWrites(r *Report, events []Event, st RegisterState) {
	writes, order := collectWrites(events, st.Key)
	c := writeCheck{r: r, st: st, holds: make(map[holdID][]*Hold), values: make(map[int64]string)}
	for _, h := range r.Holds[st.Key] {
		id := holdID{h.PID, h.Key, h.Token, 0}
		c.holds[id] = append(c.holds[id], h)
	}
	for _, wid := range order {
		c.check(wid, writes[wid])
	}
	for wid := range st.Applied {
		if writes[wid] == nil {
			r.add(KindRegister, st.Key, "the register applied write %s, which no worker recorded starting", wid)
		}
	}
	c.checkFinal()
	r.sortViolations()
}

// write is one register write: its start and end events (nil if not
// recorded).
type write struct {
	ev    *Event
	start *Event
}

// collectWrites returns the writes to key recorded in events, by write id,
// and their ids in the order they first appear.
func collectWrites(events []Event, key string) (map[string]*write, []string) {
	writes := make(map[string]*write)
	var order []string
	for i := range events {
		ev := &events[i]
		if ev.Key != key || (ev.Ev != EvWriteStart && ev.Ev != EvWrite) {
			continue
		}
		w := writes[ev.WID]
		if w == nil {
			w = &write{}
			writes[ev.WID] = w
			order = append(order, ev.WID)
		}
		if ev.Ev == EvWrite {
			w.ev = ev
		} else {
			w.start = ev
		}
	}
	return writes, order
}

// writeCheck is what CheckWrites keeps while it goes through the writes.
type writeCheck struct {
	r  *Report
	st RegisterState
	// holds: the holds of st.Key, by (pid, key, token), in the order
	// they began (more than one: a hold taken back after an outage, or
	// the token held again after a reset).
	holds map[holdID][]*Hold
	// values: the write that was acknowledged with each value.
	values map[int64]string
	// ok and unknown count the acknowledged writes and those whose
	// outcome is unknown.
	ok, unknown int64
}

// check checks write wid by its outcome.
func (c *writeCheck) check(wid string, w *write) {
	out := OutUnknown
	if w.ev != nil {
		out = w.ev.Outcome
	}
	switch out {
	case OutOK:
		c.acknowledged(wid, w)
	case OutStale:
		c.r.Writes.Stale++
		if c.st.Applied[wid] {
			c.r.add(KindRegister, c.st.Key, "write %s was rejected as stale but is in the register", wid)
		}
	default:
		c.unknown++
		c.r.Writes.Unknown++
	}
}

// acknowledged checks an acknowledged write: its value is no other
// acknowledged write's, and the register, if it can tell, applied it.
// It counts the write as accepted late if it began after its hold's
// validity ended.
func (c *writeCheck) acknowledged(wid string, w *write) {
	c.ok++
	c.r.Writes.OK++
	if other, dup := c.values[w.ev.Value]; dup {
		c.r.add(KindLostUpdate, c.st.Key, "value %d acknowledged twice (writes %s and %s): an increment was lost", w.ev.Value, other, wid)
	}
	c.values[w.ev.Value] = wid
	if w.start != nil {
		if h := c.holdAt(holdID{w.ev.PID, w.ev.Key, w.ev.Token, 0}, w.start.T); h != nil && w.start.T > h.ValidEnd() {
			c.r.Writes.LateAccepted++
		}
	}
	if c.st.Applied != nil && !c.st.Applied[wid] {
		c.r.add(KindRegister, c.st.Key, "write %s (value %d) was acknowledged but is not in the register", wid, w.ev.Value)
	}
}

// holdAt returns the hold id the worker was in at t: the last of its
// holds begun by then.
func (c *writeCheck) holdAt(id holdID, t int64) *Hold {
	var in *Hold
	for _, h := range c.holds[id] {
		if h.Acquired <= t {
			in = h
		}
	}
	return in
}

// checkFinal checks the register's final value: at least the acknowledged
// increments, at most those and the unknown ones.
func (c *writeCheck) checkFinal() {
	st, ok, unknown := c.st, c.ok, c.unknown
	switch {
	case st.Final < ok:
		c.r.add(KindLostUpdate, st.Key, "final value %d, but %d increments were acknowledged: %d lost", st.Final, ok, ok-st.Final)
	case st.Final > ok+unknown:
		c.r.add(KindRegister, st.Key, "final value %d exceeds the %d acknowledged and %d unknown increments", st.Final, ok, unknown)
	}
}
