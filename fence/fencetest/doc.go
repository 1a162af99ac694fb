// Package fencetest is the conformance suite of fencing adapters. It
// belongs in an adapter's tests, not in production code.
//
// It checks that a resource keeps the contract of package fence, as the
// driver conformance suite checks a store. dsync's adapters (fence/fencesql
// on PostgreSQL, MySQL, MariaDB and SQLite; fence/fencehttp;
// fence/fencemongo in transactions) run it in their tests, and an adapter
// of one's own can run it the same way: implement Resource over it, and
// call Run.
//
// The suite sees the resource as one register per key, written through the
// fence under (key, token) and read without it. Each trial takes a fresh
// key and runs one of these scenarios, with delays drawn from a seeded
// source:
//
//   - A paused holder: holder A takes a token, then pauses before its
//     write; holder B takes the next token and writes; A wakes and writes.
//     A's write must be refused.
//   - A holder paused inside: A's fence admits it (Write.Admitted), and A
//     pauses there while B, with the next token, starts its write; then A
//     goes on. Either order of the two writes may apply, but never A's
//     after B's.
//   - A session ended under a holder (a Resource that is a
//     SessionEnder only): A's fence admits it, the store ends the session
//     under A's write (EndSession), and B, with the next token, starts
//     its write while A pauses; then A goes on. Either order of the two
//     writes may apply, but never A's after B's: an admission must
//     outlive its session, or the write it admitted must be refused.
//   - Holders racing: three holders with rising tokens write at random
//     moments, some pausing inside; some writes lose their reply (their
//     context ends while they are under way) and are sent again with the
//     same token and value, as a client retries a statement; a reader reads
//     meanwhile.
//
// After each trial, the register must hold the value of a write whose
// token is at least that of every write that applied (else a stale write
// landed after a later one), and each key's history of calls and returns
// must be linearizable (Porcupine) against the sequential model of the
// contract: a write under a token below the mark is refused and changes
// nothing; one under a token at least the mark applies and raises the mark;
// a write whose outcome is unknown did either, or raised the mark alone.
package fencetest
