package mongotest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// errNoDocker means no Docker engine answered (or Docker was disabled): not
// worth a log line, FerretDB is the expected fallback.
var errNoDocker = errors.New("no Docker engine")

// The variables that choose the Docker deployment.
const (
	envDocker    = "DSYNC_MONGOTEST_DOCKER"        // 0, false, no, off: skip Docker
	envTopology  = "DSYNC_MONGOTEST_TOPOLOGY"      // single (default), replset, sharded
	envVersion   = "DSYNC_MONGOTEST_MONGO_VERSION" // the official mongo image's tag; default 7.0
	envImage     = "DSYNC_MONGOTEST_MONGO_IMAGE"   // a whole image reference instead
	envDockerBin = "DSYNC_MONGOTEST_DOCKERSERVER"  // a ready-built dockerserver
)

// dockerModule holds the command that starts and keeps a deployment in
// Docker through dockertest, so that the library module never requires
// dockertest.
var dockerModule = serverModule{
	what:   "the Docker deployment's keeper",
	module: "github.com/go-dsync/dsync/internal/testbed/dockerserve",
	dir:    filepath.Join("internal", "testbed", "dockerserve"),
	cmd:    "dockerserver",
	envBin: envDockerBin,
}

var dockerServerBinary = dockerModule.binary()

// dockerStartTimeout bounds a deployment's start, image pulls included
// (dockerserver bounds its own start a little sooner).
const dockerStartTimeout = 16 * time.Minute

// exitNoEngine is dockerserver's exit status when no engine answers.
const exitNoEngine = 4

// dockerServer is a deployment kept by a dockerserver child: the child
// removes the containers when it is stopped.
type dockerServer struct {
	child    *child
	dir      string // the child's stderr log; removed by stop
	topology string
	image    string
}

// dockerDisabled: DSYNC_MONGOTEST_DOCKER says no.
func dockerDisabled() bool {
	switch strings.ToLower(os.Getenv(envDocker)) {
	case "0", "false", "no", "off":
		return true
	}
	return false
}

// dockerAsked reports the topology a user asked for by name, "" when
// none was: a named topology gets no fallback, so that a run meant for a
// sharded cluster never passes on FerretDB.
func dockerAsked() string { return strings.TrimSpace(os.Getenv(envTopology)) }

// startDocker starts the deployment DSYNC_MONGOTEST_TOPOLOGY names in
// Docker through a dockerserver child. It returns errNoDocker quickly, and
// without building anything, when no engine answers a ping.
func startDocker() (*dockerServer, error) {
	if dockerDisabled() || !dockerAnswers() {
		return nil, errNoDocker
	}
	topology := dockerAsked()
	if topology == "" {
		topology = "single"
	}
	args := []string{"-topology", topology}
	image := "mongo (dockerserver's default version)"
	if v := os.Getenv(envVersion); v != "" {
		args = append(args, "-version", v)
		image = "mongo:" + v
	}
	if v := os.Getenv(envImage); v != "" {
		args = append(args, "-image", v)
		image = v
	}
	exe, err := dockerServerBinary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "dsync-mongotest-docker-")
	if err != nil {
		return nil, err
	}
	c, err := startServerProcess("dockerserver child", exe, args, filepath.Join(dir, "stderr.log"), dockerStartTimeout, syscall.SIGTERM)
	if err != nil {
		_ = os.RemoveAll(dir)
		var exit *childExit
		if errors.As(err, &exit) && exit.code == exitNoEngine {
			return nil, errNoDocker
		}
		return nil, fmt.Errorf("%s of %s in Docker: %w", topology, image, err)
	}
	return &dockerServer{child: c, dir: dir, topology: topology, image: image}, nil
}

// stop has the child remove the containers and their network.
func (d *dockerServer) stop() error {
	err := d.child.stop(2 * time.Minute)
	_ = os.RemoveAll(d.dir)
	return err
}
