package dsyncmongo

// ourConnection reports whether addr, which a server says it sees this
// process come from, is the local address of a TCP socket of this
// process (ownsocket.go).
func ourConnection(addr string) (bool, error) { return ownsSocket("/proc", addr) }
