// Package leadertest provides an in-memory leader.MemberStore for tests.
// Do not use it in production: its state lives in one process, so only
// that process's Elections can share it.
//
// A MemoryMembers stands for one database that every process of a test
// shares: give the same one to every Election (leader.WithMembers) and
// Partition of the test. It serves leader.MemberStore, operator.Directives
// and operator.TransferRequests, and is safe for concurrent use. A call's
// write is applied before the call returns, so none lands late. Its time
// (a Member's LastSeen, a Directive's At) is the time package's, so tests
// under testing/synctest run on fake time.
// SetReachable cuts it off (every call fails with ErrUnreachable), as
// dsync's memory.Process.SetReachable cuts a Client off its store.
package leadertest
