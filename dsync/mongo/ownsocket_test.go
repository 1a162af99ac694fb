package dsyncmongo

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// Whether the loopback address a server sees is a connection of this
// process (ownsocket.go), or of another: a proxy on the server's machine.

// fakeProc writes a /proc with the socket tables tcp and tcp6 (a
// header, then the lines given; nil: no such file) and the descriptors
// of self/fd (name → link target).
func fakeProc(t *testing.T, tcp, tcp6 []string, fds map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for _, dir := range []string{"net", filepath.Join("self", "fd")} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	header := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	for name, lines := range map[string][]string{"tcp": tcp, "tcp6": tcp6} {
		if lines == nil {
			continue
		}
		if err := os.WriteFile(filepath.Join(root, "net", name), []byte(header+strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for fd, target := range fds {
		if err := os.Symlink(target, filepath.Join(root, "self", "fd", fd)); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// procLine is a line of /proc/net/tcp or tcp6 for a socket from local to
// remote (as the kernel writes addresses, on a little-endian machine),
// of inode.
func procLine(local, remote, inode string) string {
	return "   0: " + local + " " + remote + " 01 00000000:00000000 00:00000000 00000000  1000        0 " + inode + " 1 0000000000000000 20 4 30 10 -1"
}

// TestOwnsSocket: an address counts as this process's when a socket of
// the tables has it for its local address and is among self/fd; a
// proxy's socket (listed, not ours), an address no socket has, one only
// a socket in TIME_WAIT has (inode 0), do not. IPv6, and IPv4 on an IPv6
// socket, are found in tcp6; a kernel without tcp6 is no failure, one
// with neither table is.
func TestOwnsSocket(t *testing.T) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("the fake tables are written as a little-endian kernel writes them")
	}
	tcp := []string{
		procLine("0100007F:9C40", "0100007F:6989", "111"), // 127.0.0.1:40000, ours
		procLine("0100007F:9C41", "0100007F:6989", "222"), // 127.0.0.1:40001, the proxy's
		procLine("0100007F:9C44", "0100007F:6989", "0"),   // 127.0.0.1:40004, TIME_WAIT
		procLine("0100007F:6989", "0100007F:9C40", "555"), // the server's end of 40000
	}
	tcp6 := []string{
		procLine("00000000000000000000000001000000:9C42", "00000000000000000000000001000000:6989", "333"), // [::1]:40002
		procLine("0000000000000000FFFF00000100007F:9C43", "0000000000000000FFFF00000100007F:6989", "444"), // [::ffff:127.0.0.1]:40003
	}
	fds := map[string]string{"0": "/dev/null", "5": "socket:[111]", "6": "socket:[333]", "7": "socket:[444]", "8": "pipe:[222]"}
	proc := fakeProc(t, tcp, tcp6, fds)
	for addr, want := range map[string]bool{
		"127.0.0.1:40000": true, "127.0.0.1:40001": false, "127.0.0.1:40004": false, "127.0.0.1:27017": false,
		"127.0.0.2:40000": false, "[::1]:40002": true, "::1:40002": true, "127.0.0.1:40003": true, "127.0.0.1:39999": false,
	} {
		if got, err := ownsSocket(proc, addr); got != want || err != nil {
			t.Errorf("ownsSocket(%q) = %v, %v; want %v", addr, got, err, want)
		}
	}
	if got, err := ownsSocket(proc, "anonymous unix socket:27017"); got || err == nil {
		t.Errorf("ownsSocket of no IP address = %v, %v; want false and an error", got, err)
	}

	noV6 := fakeProc(t, tcp, nil, fds)
	if got, err := ownsSocket(noV6, "127.0.0.1:40000"); !got || err != nil {
		t.Errorf("without tcp6: ownsSocket = %v, %v; want true", got, err)
	}
	none := fakeProc(t, nil, nil, fds)
	if got, err := ownsSocket(none, "127.0.0.1:40000"); got || !errors.Is(err, errNoSocketTable) {
		t.Errorf("without socket tables: ownsSocket = %v, %v; want false and errNoSocketTable", got, err)
	}
	noFDs := fakeProc(t, tcp, tcp6, nil)
	if err := os.Remove(filepath.Join(noFDs, "self", "fd")); err != nil {
		t.Fatal(err)
	}
	if got, err := ownsSocket(noFDs, "127.0.0.1:40000"); got || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("without self/fd: ownsSocket = %v, %v; want false and the error", got, err)
	}
}

// TestOwnsSocketOnThisMachine: in the real /proc, both ends of a
// loopback connection this process made are its own; an address of a
// socket of another process is not.
func TestOwnsSocketOnThisMachine(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is read on Linux only")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if s := <-accepted; s != nil {
		defer s.Close()
	}
	for _, addr := range []string{c.LocalAddr().String(), l.Addr().String()} {
		if got, err := ownsSocket("/proc", addr); !got || err != nil {
			t.Errorf("ownsSocket(%q), an address of this process = %v, %v; want true", addr, got, err)
		}
	}
	p := startProxy(t, l.Addr().String())
	if got, err := ownsSocket("/proc", p.addr); got || err != nil {
		t.Errorf("ownsSocket(%q), the listener of another process = %v, %v; want false", p.addr, got, err)
	}
}

// TestLoopbackNotThroughAProxy: a store reached through a proxy on the
// server's machine, another process that connects to the server over
// loopback for clients of every machine, does not report loopback: the
// address the server sees is the proxy's, not this process's (Linux
// only; elsewhere it is taken for this process's).
func TestLoopbackNotThroughAProxy(t *testing.T) {
	onLoopback(t)
	if runtime.GOOS != "linux" {
		t.Skip("whether an address is this process's is told on Linux only")
	}
	ctx := testCtx(t, 60*time.Second)
	srv := mongotest.Shared(t)
	hosts := options.Client().ApplyURI(srv.URI()).Hosts
	if len(hosts) != 1 {
		t.Skipf("the test server has %d hosts; the proxy stands for one", len(hosts))
	}
	direct := mongotest.NewDatabase(t)
	st, err := NewStore(direct, WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	if !st.Roles().Loopback.Loopback(testCtx(t, time.Minute)) {
		t.Skip("the test server, reached directly, does not count as loopback (FerretDB on PostgreSQL?): nothing to compare")
	}

	p := startProxy(t, hosts[0])
	viaProxy := mongotest.SameDatabase(t, direct, options.Client().SetHosts([]string{p.addr}).SetDirect(true))
	sp, err := NewStore(viaProxy, WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	if err := sp.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	if sp.Roles().Loopback.Loopback(testCtx(t, time.Minute)) {
		t.Error("a store reached through a proxy in another process reports loopback")
	}
}

// proxy is a TCP proxy in another process (this test binary, running
// TestHelperProxy): the connections it makes to its target are its own.
type proxy struct{ addr string }

// startProxy starts a proxy to target on a loopback port, stopped in
// t.Cleanup.
func startProxy(t *testing.T, target string) proxy {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProxy$", "-test.count=1")
	cmd.Env = append(os.Environ(), "DSYNC_TEST_PROXY_TO="+target)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close() // the proxy stops when its stdin closes
		if err := cmd.Wait(); err != nil {
			t.Logf("the proxy: %v; stderr:\n%s", err, stderr.String())
		}
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if addr, ok := strings.CutPrefix(sc.Text(), "proxy listening on "); ok {
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			return proxy{addr}
		}
	}
	t.Fatalf("the proxy did not say where it listens: %v", sc.Err())
	return proxy{}
}

// TestHelperProxy is the proxy startProxy runs, until its stdin closes;
// as a test, it does nothing.
func TestHelperProxy(t *testing.T) {
	target := os.Getenv("DSYNC_TEST_PROXY_TO")
	if target == "" {
		t.Skip("the proxy of startProxy, run in a process of its own")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		conns   []net.Conn
		stopped bool
		wg      sync.WaitGroup
	)
	keep := func(c net.Conn) {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			c.Close()
		}
		conns = append(conns, c)
	}
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			keep(c)
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			keep(up)
			wg.Go(func() { _, _ = io.Copy(up, c); up.Close() })
			wg.Go(func() { _, _ = io.Copy(c, up); c.Close() })
		}
	})
	os.Stdout.WriteString("proxy listening on " + l.Addr().String() + "\n")
	_, _ = io.Copy(io.Discard, os.Stdin)
	l.Close()
	mu.Lock()
	stopped = true
	for _, c := range conns {
		c.Close()
	}
	mu.Unlock()
	wg.Wait()
}
