module github.com/go-dsync/dsync/contrib/otel

go 1.25.0

// For development in this repository; a release requires a tagged
// version of the library instead (see cmd/dsync/go.mod).
replace github.com/go-dsync/dsync => ../..

require (
	github.com/go-dsync/dsync v0.0.0-00010101000000-000000000000
	go.opentelemetry.io/otel v1.34.0
	go.opentelemetry.io/otel/metric v1.34.0
	go.opentelemetry.io/otel/sdk/metric v1.34.0
)

require (
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/rs/xid v1.6.0 // indirect
	go.opentelemetry.io/auto/sdk v1.1.0 // indirect
	go.opentelemetry.io/otel/sdk v1.34.0 // indirect
	go.opentelemetry.io/otel/trace v1.34.0 // indirect
	golang.org/x/sys v0.30.0 // indirect
)
