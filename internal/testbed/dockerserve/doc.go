// Package dockerserve starts MongoDB deployments in Docker for the test
// harness (github.com/go-dsync/dsync/internal/testbed/mongotest): a one-member
// replica set, a three-member replica set, or a sharded cluster of two
// shards, a config server and a mongos, of a chosen MongoDB version,
// through github.com/ory/dockertest/v3. It is a module of its own, as
// internal/ferretserve is, so that no program importing the library gets
// dockertest in its module graph: the harness builds cmd/dockerserver
// from here and runs it as a child process.
//
// What a deployment consists of and what its members are told (the
// container command lines, the replSetInitiate configurations, the
// addShard commands) is computed by [NewPlan] and the methods of [Plan];
// when a deployment is ready is decided from its members' hello answers by
// [ReplicaSetReady] and [RouterReady]. Those are pure, and tested without
// Docker; [Start] is what runs them against an engine.
package dockerserve
