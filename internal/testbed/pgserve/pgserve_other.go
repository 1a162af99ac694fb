//go:build !unix

package pgserve

import "errors"

// User is the PostgreSQL superuser a cluster is made with.
const User = "dsync"

// A Server is a PostgreSQL server started by Start; only on Unix.
type Server struct{}

// Options configure Start.
type Options struct {
	DirPrefix      string
	MaxConnections int
	Logf           func(format string, args ...any)
}

var errUnix = errors.New("pgserve starts PostgreSQL on Unix only")

func BinDir() (string, error)                        { return "", errUnix }
func Start(Options) (*Server, error)                 { return nil, errUnix }
func (*Server) NewDatabase(string) (string, error)   { return "", errUnix }
func (*Server) Exec(string, string) error            { return errUnix }
func (*Server) Query(string, string) (string, error) { return "", errUnix }
func (*Server) URL(string) string                    { return "" }
func (*Server) Port() int                            { return 0 }
func (*Server) Version() string                      { return "" }
func (*Server) Stop()                                {}
func (*Server) Hold(string, string) (func(), error)  { return nil, errUnix }
