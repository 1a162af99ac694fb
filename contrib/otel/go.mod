module github.com/go-dsync/dsync/contrib/otel

go 1.25.0

// The replace is for work in this repository (go.work joins the modules
// anyway; it keeps GOWORK=off builds and tidying offline). A consumer's
// build ignores it and fetches the library at the version required
// below, which scripts/pin-library sets to a commit of this repository
// (docs/releasing.md).
replace github.com/go-dsync/dsync => ../..

require (
	github.com/go-dsync/dsync v0.0.0-20261129095051-e0f8042fc1ea
	github.com/prometheus/client_golang v1.20.5
	go.opentelemetry.io/otel v1.34.0
	go.opentelemetry.io/otel/exporters/prometheus v0.56.0
	go.opentelemetry.io/otel/metric v1.34.0
	go.opentelemetry.io/otel/sdk/metric v1.34.0
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/client_model v0.6.1 // indirect
	github.com/prometheus/common v0.61.0 // indirect
	github.com/prometheus/procfs v0.15.1 // indirect
	github.com/rs/xid v1.6.0 // indirect
	go.opentelemetry.io/auto/sdk v1.1.0 // indirect
	go.opentelemetry.io/otel/sdk v1.34.0 // indirect
	go.opentelemetry.io/otel/trace v1.34.0 // indirect
	golang.org/x/sys v0.30.0 // indirect
	google.golang.org/protobuf v1.36.3 // indirect
)
