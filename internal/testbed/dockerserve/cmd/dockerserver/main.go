// Command dockerserver starts a MongoDB deployment in Docker for the test
// harness (github.com/go-dsync/dsync/internal/testbed/mongotest), which
// runs it as a child process, as it runs the embedded FerretDB. It lives in this
// module, not the library's, so that the library module never requires
// dockertest: mongotest builds it with `go build` from this directory.
//
// Usage:
//
//	dockerserver [-topology single|replset|sharded] [-version 7.0] [-image REPO:TAG]
//
// It prints the deployment's URI as one line on stdout once it is ready,
// and keeps it until SIGTERM or SIGINT arrives or its stdin reaches EOF
// (the parent is done with it, or died); then it removes the containers
// and their network. Progress and errors go to stderr. Exit status 4: no
// Docker engine answers; 3: the deployment could not be started; 2:
// usage.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-dsync/dsync/internal/testbed/dockerserve"
)

// Exit statuses the harness reads.
const (
	exitNoEngine = 4
	exitFailed   = 3
	exitUsage    = 2
)

// startTimeout bounds the start, image pulls included.
const startTimeout = 15 * time.Minute

func main() {
	topology := flag.String("topology", "single", "single, replset or sharded")
	version := flag.String("version", dockerserve.DefaultVersion, "MongoDB version: the tag of the official mongo image")
	image := flag.String("image", "", "image REPO:TAG to run instead of the official one of -version")
	flag.Parse()
	t, err := dockerserve.ParseTopology(*topology)
	if err != nil || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: dockerserver [-topology single|replset|sharded] [-version 7.0] [-image REPO:TAG]")
		os.Exit(exitUsage)
	}
	ref := *version
	if *image != "" {
		ref = *image
	}
	os.Exit(serve(t, ref))
}

func serve(t dockerserve.Topology, ref string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop()
	}()

	plan, err := dockerserve.NewPlan(t, "dsync-mongotest-"+randomHex(3))
	if err != nil {
		fmt.Fprintf(os.Stderr, "dockerserver: %v\n", err)
		return exitUsage
	}
	repo, tag := dockerserve.Image(ref)
	startCtx, cancel := context.WithTimeout(ctx, startTimeout)
	cluster, err := dockerserve.Start(startCtx, plan, repo, tag, os.Stderr)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "dockerserver: %v\n", err)
		if errors.Is(err, dockerserve.ErrNoEngine) {
			return exitNoEngine
		}
		return exitFailed
	}
	fmt.Println(cluster.URI)
	<-ctx.Done()
	if err := cluster.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "dockerserver: %v\n", err)
		return exitFailed
	}
	return 0
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
