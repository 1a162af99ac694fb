package queue

import (
	"errors"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// The engine's documents and store are the driver contract's (package
// dsync/driver): these names keep the protocol's code short.
type (
	Doc      = driver.Doc
	Floor    = driver.Floor
	Session  = driver.Session
	Interval = driver.Interval
	Store    = driver.Store
	Mode     = driver.Mode
)

// Kinds of documents (see package dsync/driver).
const (
	KindClaim    = driver.KindClaim
	KindShadow   = driver.KindShadow
	KindRelease  = driver.KindRelease
	KindWithdraw = driver.KindWithdraw
	KindDead     = driver.KindDead
	KindGate     = driver.KindGate
	KindProtocol = driver.KindProtocol
)

// Modes of claims (see Grant).
const (
	Exclusive = driver.Exclusive
	Shared    = driver.Shared
	Weighted  = driver.Weighted
)

// ErrExists is what an insert returns when a document with the same ID
// exists: another process won that epoch, or the marker is already there.
var ErrExists = driver.ErrExists

// IDs of a key's documents (see package dsync/driver).
var (
	ClaimID  = driver.ClaimID
	EndID    = driver.EndID
	ShadowID = driver.ShadowID
	GateID   = driver.GateID
)

// ProtocolID is the ID of the store's protocol document.
const ProtocolID = driver.ProtocolID

// ErrReset reports that the store no longer holds what this process knew
// of a key: its collections were emptied, dropped or restored from a
// backup while the process ran. The claim the call was about has been
// given up (withdrawn, or left to end with its session); what the engine
// knew of every key is forgotten. Check the session (it may be gone too)
// and claim again.
var ErrReset = errors.New("the store lost this key's history (emptied or restored)")

// Times gives the engine the store's time, as an interval that certainly
// contains it, and the local monotonic time that local deadlines and the
// protocol's durations are measured on. (Named apart from the clock of a
// dsync.Client's lease, and clockcheck.Clock, a machine's
// wall and monotonic clocks, from which the Client derives these.)
type Times interface {
	ServerNow() Interval
	Mono() time.Duration
}
