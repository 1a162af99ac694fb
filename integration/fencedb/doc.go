// Package fencedb tests fence/fencesql against real servers: PostgreSQL
// and MariaDB started by its harness (sqlserve), and SQLite in a file.
// It is a module of its own so that the drivers stay out of the
// library's module graph. Its tests are the SQL adapter's: the statements'
// outcomes and locks, Marks, the conformance suite fence/fencetest on each
// dialect and over fence/fencehttp with fencesql's Marks (-fencetest.trials
// when given, else 1,000 trials each under DSYNC_LONG=1, else 100), and a planted Resource that
// skips the check, which the suite must catch. BenchmarkFencedTx measures
// what the check costs on PostgreSQL.
package fencedb
