package leadermongo_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/dsync"
	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/leader"
	leadermongo "github.com/go-dsync/dsync/leader/mongo"
)

// The test binary re-executed as a candidate or observer process.
const (
	roleEnv = "LEADERMONGO_TEST_ROLE" // "candidate" or "observer"
	uriEnv  = "LEADERMONGO_TEST_URI"
	dbEnv   = "LEADERMONGO_TEST_DB"
)

// Timing of the processes' elections.
const (
	procTTL       = 2 * time.Second
	procPoll      = 100 * time.Millisecond // lock poll cap
	procHeartbeat = 200 * time.Millisecond
	electionName  = "it"
)

func childBackend(ctx context.Context) (*mongo.Client, *lproc, error) {
	client, err := mongo.Connect(options.Client().ApplyURI(os.Getenv(uriEnv)))
	if err != nil {
		return nil, nil, err
	}
	store, err := dsyncmongo.NewStore(client.Database(os.Getenv(dbEnv)))
	if err != nil {
		return nil, nil, err
	}
	c, err := dsync.NewClient(store, dsync.ClientWithPollInterval(procPoll), dsync.ClientWithTTL(procTTL))
	if err != nil {
		return nil, nil, err
	}
	members, err := leadermongo.NewStore(store)
	return client, &lproc{c: c, store: store, members: members}, err
}

// runChild runs a candidate or an observer, driven by lines on stdin and
// reporting on stdout, until stdin closes.
func runChild(role string) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client, b, err := childBackend(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer client.Disconnect(context.Background())
	defer b.c.Close()

	commands := make(chan string)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			commands <- sc.Text()
		}
		close(commands)
	}()

	elected := make(chan leader.Info, 1)
	e, err := leader.NewElection(b.c, electionName,
		leader.WithMembers(b.members),
		leader.WithHeartbeatInterval(procHeartbeat),
		leader.WithPollInterval(procPoll/2),
		leader.WithVersion("v-"+role),
		leader.OnElected(func(info leader.Info) { elected <- info }))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer e.Close()

	if role == "observer" {
		for info := range e.Observe(ctx) {
			fmt.Printf("observed %s %d\n", info.ID, info.Token)
			select {
			case _, ok := <-commands:
				if !ok {
					return 0
				}
			default:
			}
		}
		return 0
	}

	fmt.Printf("id %s\n", e.ID())
	for {
		// Campaign until elected, then wait for a resign command.
		lctx, err := e.Campaign(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, "campaign:", err)
			return 1
		}
		info := <-elected
		fmt.Printf("elected %d\n", info.Token)
		select {
		case <-lctx.Done():
			fmt.Printf("ended %v\n", context.Cause(lctx))
		case cmd, ok := <-commands:
			if !ok {
				return 0
			}
			if cmd == "resign" {
				if err := e.Resign(ctx); err != nil {
					fmt.Fprintln(os.Stderr, "resign:", err)
					return 1
				}
				fmt.Println("resigned")
			}
		}
		// Do not campaign again until told to, so a resignation hands
		// leadership to another process.
		if cmd, ok := <-commands; !ok || cmd != "campaign" {
			return 0
		}
	}
}

type proc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	id    string
}

func startProc(t *testing.T, role, uri, db string) *proc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), roleEnv+"="+role, uriEnv+"="+uri, dbEnv+"="+db)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
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
	p := &proc{cmd: cmd, stdin: stdin, lines: make(chan string, 100)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	if role == "candidate" {
		line := p.next(t, 30*time.Second)
		if !strings.HasPrefix(line, "id ") {
			t.Fatalf("candidate said %q, want its id", line)
		}
		p.id = strings.TrimPrefix(line, "id ")
	}
	return p
}

func (p *proc) send(t *testing.T, line string) {
	t.Helper()
	if _, err := fmt.Fprintln(p.stdin, line); err != nil {
		t.Fatal(err)
	}
}

func (p *proc) next(t *testing.T, timeout time.Duration) string {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			t.Fatal("process exited")
		}
		return l
	case <-time.After(timeout):
		t.Fatalf("no output within %v", timeout)
		return ""
	}
}

// waitElected waits until one of ps reports being elected and returns it
// with its token.
func waitElected(t *testing.T, ps []*proc, timeout time.Duration) (*proc, uint64) {
	t.Helper()
	deadline := time.After(timeout)
	cases := make(chan struct {
		p    *proc
		line string
	})
	stop := make(chan struct{})
	defer close(stop)
	for _, p := range ps {
		go func() {
			for {
				select {
				case l, ok := <-p.lines:
					if !ok {
						return
					}
					select {
					case cases <- struct {
						p    *proc
						line string
					}{p, l}:
					case <-stop:
						return
					}
					if strings.HasPrefix(l, "elected ") {
						return
					}
				case <-stop:
					return
				}
			}
		}()
	}
	for {
		select {
		case c := <-cases:
			var token uint64
			if _, err := fmt.Sscanf(c.line, "elected %d", &token); err == nil {
				return c.p, token
			}
		case <-deadline:
			t.Fatalf("nobody elected within %v", timeout)
		}
	}
}
