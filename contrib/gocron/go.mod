module github.com/go-dsync/dsync/contrib/gocron

go 1.25.0

// The replace is for work in this repository (go.work joins the modules
// anyway; it keeps GOWORK=off builds and tidying offline). A consumer's
// build ignores it and fetches the library at the version required
// below, which scripts/pin-library sets to a commit of this repository
// (docs/releasing.md).
replace github.com/go-dsync/dsync => ../..

require (
	github.com/go-co-op/gocron/v2 v2.21.2
	github.com/go-dsync/dsync v0.0.0-20261129095051-e0f8042fc1ea
	github.com/robfig/cron/v3 v3.0.1
	go.mongodb.org/mongo-driver/v2 v2.8.2
)

require (
	github.com/google/uuid v1.6.0 // indirect
	github.com/jonboulle/clockwork v0.5.0 // indirect
	github.com/klauspost/compress v1.17.6 // indirect
	github.com/rs/xid v1.6.0 // indirect
	github.com/xdg-go/pbkdf2 v1.0.0 // indirect
	github.com/xdg-go/scram v1.2.0 // indirect
	github.com/xdg-go/stringprep v1.0.4 // indirect
	github.com/youmark/pkcs8 v0.0.0-20240726163527-a2c0da244d78 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	golang.org/x/crypto v0.33.0 // indirect
	golang.org/x/sync v0.20.0 // indirect
	golang.org/x/sys v0.30.0 // indirect
	golang.org/x/text v0.22.0 // indirect
)
