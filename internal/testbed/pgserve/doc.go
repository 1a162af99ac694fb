// Package pgserve starts a PostgreSQL server for tests: a cluster made
// by initdb in a temporary directory, on a loopback port, without fsync,
// run as the postgres user (or nobody) when the test runs as root, since
// initdb and postgres refuse root. It finds PostgreSQL's programs on
// PATH, by pg_config, or in Debian's /usr/lib/postgresql/*/bin.
// internal/testbed/mongotest keeps FerretDB's data there, and
// integration/fencedb tests fence/fencesql against it.
package pgserve
