module github.com/go-dsync/dsync

go 1.25.0

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/rs/xid v1.6.0
	go.mongodb.org/mongo-driver/v2 v2.8.2
	go.uber.org/goleak v1.3.0
	golang.org/x/sync v0.20.0
	golang.org/x/sys v0.30.0
)

require (
	github.com/klauspost/compress v1.17.6 // indirect
	github.com/stretchr/testify v1.10.0 // indirect
	github.com/xdg-go/pbkdf2 v1.0.0 // indirect
	github.com/xdg-go/scram v1.2.0 // indirect
	github.com/xdg-go/stringprep v1.0.4 // indirect
	github.com/youmark/pkcs8 v0.0.0-20240726163527-a2c0da244d78 // indirect
	golang.org/x/crypto v0.33.0 // indirect
	golang.org/x/text v0.22.0 // indirect
)
