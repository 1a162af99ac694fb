package dsyncmongo

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Whether an address a server says it sees this process come from is
// this process's own. A server may see a loopback address though the
// connection did not come from this network namespace: a proxy on the
// server's machine (HAProxy, stunnel, nginx, a server-side Envoy)
// connects to it over loopback for clients of every machine. Then the
// loopback address is the proxy's, the local address of a socket of
// another process. On Linux, /proc tells: the address must be the local
// address of a TCP socket (net/tcp, net/tcp6) whose inode is one of this
// process's file descriptors (self/fd).

// errNoSocketTable: /proc lists no TCP sockets (neither net/tcp nor
// net/tcp6 could be read).
var errNoSocketTable = errors.New("no TCP socket table in /proc")

// ownsSocket reports whether addr (host:port, as whatsmyuri tells it; an
// IPv6 host in brackets or not) is the local address of a TCP socket that
// this process holds, as proc (a /proc) lists them.
func ownsSocket(proc, addr string) (bool, error) {
	ip, port, ok := splitAddr(addr)
	if !ok {
		return false, fmt.Errorf("%q is no IP address and port", addr)
	}
	inodes := make(map[string]bool)
	read := 0
	for _, table := range []string{"tcp", "tcp6"} {
		err := socketInodes(filepath.Join(proc, "net", table), ip, port, inodes)
		if errors.Is(err, fs.ErrNotExist) {
			continue // no IPv6 (or no IPv4) in this kernel
		}
		if err != nil {
			return false, err
		}
		read++
	}
	if read == 0 {
		return false, errNoSocketTable
	}
	if len(inodes) == 0 {
		return false, nil
	}
	fdDir := filepath.Join(proc, "self", "fd")
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		return false, err
	}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
		if err != nil {
			continue // closed since it was listed
		}
		if inode, ok := strings.CutPrefix(link, "socket:["); ok && inodes[strings.TrimSuffix(inode, "]")] {
			return true, nil
		}
	}
	return false, nil
}

// socketInodes adds to inodes the inode of each socket of the table at
// path (/proc/net/tcp's format) whose local address is ip:port.
func socketInodes(path string, ip net.IP, port uint16, inodes map[string]bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 {
			continue
		}
		lip, lport, ok := procAddr(fields[1])
		if ok && lport == port && lip.Equal(ip) && fields[9] != "0" {
			inodes[fields[9]] = true
		}
	}
	return sc.Err()
}

// procAddr parses an address as /proc/net/tcp and tcp6 write it: the IP
// in hexadecimal as the kernel holds it (32-bit words in the machine's
// byte order), a colon, the port in hexadecimal.
func procAddr(s string) (net.IP, uint16, bool) {
	h, p, ok := strings.Cut(s, ":")
	if !ok || (len(h) != 8 && len(h) != 32) {
		return nil, 0, false
	}
	raw, err := hex.DecodeString(h)
	if err != nil {
		return nil, 0, false
	}
	ip := make(net.IP, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(ip[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return nil, 0, false
	}
	return ip, uint16(port), true
}

// splitAddr parses host:port as a server tells it: an IPv6 host in
// brackets, or not ("::1:27017": the port after the last colon).
func splitAddr(addr string) (net.IP, uint16, bool) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		i := strings.LastIndexByte(addr, ':')
		if i < 0 {
			return nil, 0, false
		}
		host, p = addr[:i], addr[i+1:]
	}
	ip := net.ParseIP(host)
	port, err := strconv.ParseUint(p, 10, 16)
	if ip == nil || err != nil {
		return nil, 0, false
	}
	return ip, uint16(port), true
}
