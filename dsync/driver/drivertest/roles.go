package drivertest

import (
	"testing"

	"github.com/go-dsync/dsync/dsync/driver"
)

// testRoles: Roles may be called before Prepare, and names the same roles
// after it; a store that pauses its feed has one.
func (s *suite) testRoles(t *testing.T) {
	st := s.open(t)
	before := served(st.Roles())
	st, _ = s.prepare(t, st)
	r := st.Roles()
	if after := served(r); after != before {
		t.Errorf("Roles before Prepare serve %v, after it %v: want the same", before, after)
	}
	if r.FeedPause != nil && r.Feed == nil {
		t.Error("Roles.FeedPause without a Roles.Feed to pause")
	}
}

// served tells which of r's roles are not nil.
func served(r driver.Roles) [14]bool {
	return [14]bool{
		r.Runs != nil, r.Maintenance != nil, r.Directory != nil, r.Reads != nil, r.KeyCheck != nil,
		r.Feed != nil, r.FeedPause != nil, r.Peers != nil, r.Revocations != nil, r.Loopback != nil,
		r.Stalls != nil, r.Uptime != nil, r.Waits != nil, r.Deadlocks != nil,
	}
}
