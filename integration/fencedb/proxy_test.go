package fencedb

import (
	"database/sql"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/go-dsync/dsync/fence/fencesql"
)

// proxy forwards loopback connections to a database server until
// frozen: then it forwards nothing more, and holds what it was sent, as
// a server that stopped answering (the connections stay open). cut
// closes them all.
type proxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	frozen chan struct{} // closed by freeze
	conns  []net.Conn
	wg     sync.WaitGroup
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, frozen: make(chan struct{})}
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		ln.Close()
		p.cut()
		p.wg.Wait()
	})
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		p.wg.Go(func() { p.pipe(s, c) })
		p.wg.Go(func() { p.pipe(c, s) })
	}
}

// pipe copies from src to dst until either closes; once frozen, it holds
// what it reads.
func (p *proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			select {
			case <-p.frozen:
				_, _ = io.Copy(io.Discard, src) // held, never delivered
				return
			default:
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// freeze stops forwarding, on the connections open and on those to come.
func (p *proxy) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.frozen:
	default:
		close(p.frozen)
	}
}

// cut closes every connection the proxy made.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// serverAddr is the loopback address of db's server.
func serverAddr(t *testing.T, d fencesql.Dialect, db *sql.DB) string {
	t.Helper()
	q := "SELECT '127.0.0.1:' || current_setting('port')"
	if d == fencesql.MySQL {
		q = "SELECT concat('127.0.0.1:', @@port)"
	}
	var addr string
	if err := db.QueryRow(q).Scan(&addr); err != nil {
		t.Fatal(err)
	}
	return addr
}

// openThrough opens a pool on db's database through addr.
func openThrough(t *testing.T, d fencesql.Dialect, db *sql.DB, addr string) *sql.DB {
	t.Helper()
	var name, q string
	switch d {
	case fencesql.PostgreSQL:
		name, q = "pgx", "SELECT 'postgres://dsync@"+addr+"/' || current_database()"
	case fencesql.MySQL:
		name, q = "mysql", "SELECT concat('root@tcp("+addr+")/', database())"
	}
	var dsn string
	if err := db.QueryRow(q).Scan(&dsn); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open(name, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	return other
}
