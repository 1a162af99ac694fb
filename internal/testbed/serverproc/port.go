package serverproc

import "net"

// FreePort returns a loopback port that was free a moment ago. Another
// process may take it before the server listens on it, so a start that
// fails is worth trying again on another.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
