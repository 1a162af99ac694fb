package lockset

import "github.com/go-dsync/dsync/dsync/internal/waitgraph"

// Reads is s.reads, for tests.
func Reads(s *Set) waitgraph.Reader { return s.reads() }
