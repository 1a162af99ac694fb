module github.com/go-dsync/dsync/integration/fencedb

go 1.25.0

require (
	github.com/go-dsync/dsync v0.0.0-20261129095051-e0f8042fc1ea
	github.com/go-sql-driver/mysql v1.9.3
	github.com/jackc/pgx/v5 v5.6.0
	modernc.org/sqlite v1.59.0
)

require (
	filippo.io/edwards25519 v1.1.0 // indirect
	github.com/anishathalye/porcupine v1.3.1 // indirect
	github.com/dustin/go-humanize v1.0.1 // indirect
	github.com/go-dsync/dsync/contrib/fencepgx v0.0.0-20261129095051-e0f8042fc1ea
	github.com/google/uuid v1.6.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20221227161230-091c0ba34f0a // indirect
	github.com/jackc/puddle/v2 v2.2.1 // indirect
	github.com/mattn/go-isatty v0.0.24 // indirect
	github.com/ncruces/go-strftime v1.0.0 // indirect
	github.com/remyoudompheng/bigfft v0.0.0-20230129092748-24d4a6f8daec // indirect
	golang.org/x/crypto v0.33.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.22.0 // indirect
	modernc.org/libc v1.75.7 // indirect
	modernc.org/mathutil v1.7.1 // indirect
	modernc.org/memory v1.12.1 // indirect
)

replace github.com/go-dsync/dsync => ../..

replace github.com/go-dsync/dsync/contrib/fencepgx => ../../contrib/fencepgx
