module github.com/go-dsync/dsync/integration/browsertest

go 1.25.0

// For development in this repository; scripts/pin-library sets the
// version required below.
replace github.com/go-dsync/dsync => ../..

require (
	github.com/chromedp/chromedp v0.23.0
	github.com/go-dsync/dsync v0.0.0-20261129095051-e0f8042fc1ea
)

require (
	github.com/chromedp/cdproto v0.159.0 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/klauspost/compress v1.17.6 // indirect
	github.com/rs/xid v1.6.0 // indirect
	github.com/xdg-go/pbkdf2 v1.0.0 // indirect
	github.com/xdg-go/scram v1.2.0 // indirect
	github.com/xdg-go/stringprep v1.0.4 // indirect
	github.com/youmark/pkcs8 v0.0.0-20240726163527-a2c0da244d78 // indirect
	go.mongodb.org/mongo-driver/v2 v2.8.2 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	golang.org/x/crypto v0.33.0 // indirect
	golang.org/x/sync v0.20.0 // indirect
	golang.org/x/sys v0.30.0 // indirect
	golang.org/x/text v0.22.0 // indirect
)
