//go:build !unix

package mongotest

import "errors"

// postgres is a PostgreSQL server the harness started; only on Unix.
type postgres struct{}

func startPostgres() (*postgres, error) {
	return nil, errors.New("the harness starts PostgreSQL on Unix only; set MONGODB_URI")
}

func (*postgres) newDatabase() (string, error) { return "", errors.New("no PostgreSQL") }
func (*postgres) stop()                        {}
