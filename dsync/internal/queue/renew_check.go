package queue

import (
	"context"
	"errors"
)

// A renewal's last check: the owner of a session stops relying on it at
// its local deadline, and a reader that found it expired then remembers
// so for a while (ReadExpired). A renewal whose expiry is computed after
// that deadline would raise the stored expiry a TTL past it, further than
// any renewal sent in time, and make its claims read live again. So the
// owner's keeper gives RenewSession a check (WithRenewalCheck), which it
// runs once it has computed the expiry to write and before it writes it.
// The expiry is then one computed before the deadline, if the check
// passes: a renewal sent in time, however late it lands.

// ErrRenewalLate is returned by RenewSession when its check (see
// WithRenewalCheck) reported, once the expiry was computed, that the
// session's owner no longer relies on it: nothing was sent.
var ErrRenewalLate = errors.New("the session's deadline passed before its renewal was sent")

type renewalCheckKey struct{}

// WithRenewalCheck returns ctx carrying valid, which RenewSession calls
// (with no lock of the engine held) after it computed the expiry to
// write and before it sends it: false sends nothing, and RenewSession
// returns ErrRenewalLate.
func WithRenewalCheck(ctx context.Context, valid func() bool) context.Context {
	return context.WithValue(ctx, renewalCheckKey{}, valid)
}

// renewalValid runs ctx's renewal check, if it carries one.
func renewalValid(ctx context.Context) bool {
	valid, _ := ctx.Value(renewalCheckKey{}).(func() bool)
	return valid == nil || valid()
}
