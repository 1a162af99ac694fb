module github.com/go-dsync/dsync/contrib/fencepgx

go 1.25.0

// The replace is for work in this repository (go.work joins the modules
// anyway; it keeps GOWORK=off builds and tidying offline). A consumer's
// build ignores it and fetches the library at the version required
// below, which scripts/pin-library sets to a commit of this repository
// (docs/releasing.md).
replace github.com/go-dsync/dsync => ../..

require (
	github.com/go-dsync/dsync v0.0.0-20261129095051-e0f8042fc1ea
	github.com/jackc/pgx/v5 v5.6.0
)

require (
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20221227161230-091c0ba34f0a // indirect
	github.com/jackc/puddle/v2 v2.2.1 // indirect
	github.com/rs/xid v1.6.0 // indirect
	golang.org/x/crypto v0.33.0 // indirect
	golang.org/x/sync v0.20.0 // indirect
	golang.org/x/sys v0.30.0 // indirect
	golang.org/x/text v0.22.0 // indirect
)
