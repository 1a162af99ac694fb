//go:build !unix

package main

import (
	"fmt"
	"os"
)

// main says what is missing: dsync runs commands in process groups and
// passes Unix signals on to them.
func main() {
	fmt.Fprintln(os.Stderr, "dsync: this command needs a Unix-like system (Linux, macOS, BSD)")
	os.Exit(1)
}
