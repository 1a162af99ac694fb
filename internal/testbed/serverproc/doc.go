// Package serverproc starts, watches and reaps the servers that test
// harnesses run as child processes. A [Proc] (internal/testbed/pgserve's
// PostgreSQL, integration/fencedb's MariaDB) is reaped by polling,
// with no goroutine waiting for it, so that tests' goroutine-leak checks
// stay clean. [SetPdeathsig] has the kernel signal a server when the test
// binary dies (internal/testbed/mongotest's FerretDB children too);
// [Credential] and [MkdirTemp] run a server that refuses root as another
// user; [FreePort] picks its port and [Tail] reads the end of its log.
package serverproc
