// Command ferretserver is the embedded FerretDB that internal/mongotest
// runs as a child process when the tests themselves are built with -race:
// a server built without the race detector is many times faster. It only
// serves when started by mongotest (its init function does the serving).
package main

import (
	"fmt"
	"os"

	_ "github.com/go-dsync/dsync/internal/mongotest" // serves in init when started by mongotest
)

func main() {
	fmt.Fprintln(os.Stderr, "ferretserver: started outside internal/mongotest; nothing to do")
	os.Exit(2)
}
