//go:build unix

package main

// The shell blocks of README.md and docs/*.md, as a new user pastes
// them. The README's "From the shell" block once started `dsync server &`
// and never named it, so every command after it exited 2, "no server".

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A shellBlock is a fenced block of a Markdown page that is not Go.
type shellBlock struct {
	page    string
	line    int // of its opening fence
	heading string
	lines   []string
}

// shellBlocks returns the blocks of the page at path (relative to the
// repository's root) that are not Go.
func shellBlocks(t *testing.T, path string) []shellBlock {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", path))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []shellBlock
	var cur *shellBlock
	heading := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(l, "#"):
			heading = l
		case cur == nil && strings.HasPrefix(l, "```"):
			cur = &shellBlock{page: path, line: n, heading: heading}
			if lang := strings.TrimPrefix(l, "```"); lang != "" && lang != "sh" && lang != "shell" && lang != "bash" && lang != "console" {
				cur.page = "" // not shell: dropped at its end
			}
		case cur != nil && strings.HasPrefix(l, "```"):
			if cur.page != "" {
				blocks = append(blocks, *cur)
			}
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return blocks
}

// shellWords returns the words of a shell line up to its comment.
func shellWords(line string) []string {
	if i := strings.Index(line, " #"); i >= 0 {
		line = line[:i]
	}
	return strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "$ "))
}

// usesServer reports whether the words of a line run a dsync command
// that connects to the server.
func usesServer(words []string) bool {
	if len(words) < 2 || words[0] != "dsync" {
		return false
	}
	for _, w := range words[1:] {
		if !strings.HasPrefix(w, "-") {
			return !slices.Contains([]string{"server", "help", "version", "completion", "demo"}, w)
		}
		if w == "-h" || w == "--help" || w == "--version" {
			return false
		}
	}
	return false
}

// Every shell block of the README and of docs/ that runs a dsync command
// against a server names the server first (MONGODB_URI or --uri) and,
// when it starts one with `dsync server &`, waits for it to answer: a
// command fails at once while nothing listens.
func TestShellBlocksNameTheServer(t *testing.T) {
	pages := []string{"README.md"}
	docs, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		pages = append(pages, filepath.Join("docs", filepath.Base(d)))
	}
	checked := 0
	for _, page := range pages {
		for _, b := range shellBlocks(t, page) {
			named, started, waited, found := false, false, false, false
			for i, l := range b.lines {
				words := shellWords(l)
				switch {
				case len(words) >= 3 && words[0] == "dsync" && words[1] == "server" && words[len(words)-1] == "&":
					started = true
				case len(words) >= 2 && words[0] == "export" && strings.HasPrefix(words[1], "MONGODB_URI="):
					named = true
				case len(words) >= 2 && words[0] == "until" && words[1] == "dsync":
					waited = true
				case usesServer(words):
					checked++
					where := fmt.Sprintf("%s:%d (block under %q)", page, b.line+1+i, b.heading)
					if !named && !slices.ContainsFunc(words, func(w string) bool { return strings.HasPrefix(w, "--uri") }) {
						t.Errorf("%s: %q runs before the block names the server (export MONGODB_URI=..., or --uri): it exits 2, \"no server\"", where, l)
						found = true
					}
					if started && !waited {
						t.Errorf("%s: %q runs right after `dsync server &`, before the server listens: wait for it (until dsync status ...)", where, l)
						found = true
					}
				}
				if found {
					break // one finding per block
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no shell block runs a dsync command: the test reads the wrong pages")
	}
}

// The README's "From the shell" block, pasted into a fresh shell, runs to
// its end: the server it starts is named and waited for, and each
// command runs its program (created here, as the reader has theirs). The
// block is run as written, but for the server's address (a free port
// rather than MongoDB's, which another server may have) and a data
// directory of the test's. The server is started late on purpose, as on
// a busy machine, so that a block that does not wait for it fails here
// every time, not once in a while.
func TestReadmeShellBlockRuns(t *testing.T) {
	t.Parallel()
	var block *shellBlock
	for _, b := range shellBlocks(t, "README.md") {
		if b.heading == "## From the shell" {
			block = &b
			break
		}
	}
	if block == nil {
		t.Fatal(`README.md has no shell block under "## From the shell"`)
	}
	dir := t.TempDir()
	work, bin := filepath.Join(dir, "work"), filepath.Join(dir, "bin")
	for _, d := range []string{work, bin} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	addr := freeAddr(t)
	script, programs := readmeScript(t, block, addr)
	runLog := filepath.Join(dir, "ran")
	for _, p := range programs {
		prog := "#!/bin/sh\necho " + shellQuote(p) + ` >>"$README_RUN_LOG"` + "\n"
		if err := os.WriteFile(filepath.Join(work, p), []byte(prog), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// dsync on PATH, whose server starts listening a second late.
	shim := fmt.Sprintf("#!/bin/sh\nif [ \"$1\" = server ]; then sleep 1; fi\nexec %s \"$@\"\n", shellQuote(dsyncBin))
	if err := os.WriteFile(filepath.Join(bin, "dsync"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), slow(3*time.Minute))
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", script)
	cmd.Dir = work
	cmd.Env = append(env(""), "PATH="+bin+":"+os.Getenv("PATH"), "HOME="+filepath.Join(dir, "home"),
		"XDG_STATE_HOME="+filepath.Join(dir, "state"), "README_RUN_LOG="+runLog)
	// A session of its own, as dsyncCmd's; the block leaves its server
	// running, so a timeout stops the whole process group, not the shell
	// alone.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	const done = "the README's block ran to its end"
	if err != nil || !strings.Contains(string(out), done) {
		t.Fatalf("the README's block, run as\n%s\nfailed: %v\n%s", script, err, out)
	}
	b, _ := os.ReadFile(runLog)
	for _, p := range programs {
		if !slices.Contains(readLines(string(b)), p) {
			t.Errorf("the README's block never ran %s; the programs that ran: %q\noutput:\n%s", p, readLines(string(b)), out)
		}
	}
}

// readmeScript makes the shell script that runs the README's block with
// its server on addr, and lists the programs the block runs (./NAME).
func readmeScript(t *testing.T, block *shellBlock, addr string) (script string, programs []string) {
	t.Helper()
	var lines []string
	servers := 0
	for _, l := range block.lines {
		l = strings.ReplaceAll(l, defaultServerAddr, addr)
		words := shellWords(l)
		if strings.Contains(l, "27017") || strings.Contains(l, "localhost") {
			t.Fatalf("README.md:%d: %q names the server otherwise than `dsync server` listens by default (%s)", block.line, l, defaultServerAddr)
		}
		for _, w := range words {
			if p, ok := strings.CutPrefix(w, "./"); ok && !slices.Contains(programs, p) {
				programs = append(programs, p)
			}
		}
		lines = append(lines, l)
		if len(words) >= 2 && words[0] == "dsync" && words[1] == "server" {
			servers++
			lines[len(lines)-1] = strings.Replace(l, "dsync server", "dsync server --addr "+addr, 1)
			lines = append(lines, `srv=$!`)
		}
	}
	if servers != 1 {
		t.Fatalf("README.md:%d: the block starts %d servers, want one (dsync server &)", block.line, servers)
	}
	if len(programs) == 0 {
		t.Fatalf("README.md:%d: the block runs no program (./NAME)", block.line)
	}
	// Every command must succeed (set -e), and the server the block
	// leaves running is stopped, and waited for, whatever happens.
	script = "set -e\nsrv=\n" +
		`trap 'st=$?; if [ -n "$srv" ]; then kill "$srv" 2>/dev/null || true; wait "$srv" || true; fi; exit $st' EXIT` + "\n" +
		strings.Join(lines, "\n") + "\necho \"the README's block ran to its end\"\n"
	return script, programs
}

// freeAddr returns a loopback address with a port nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Beside each copy of the leader example's errgroup, whose comment says
// its context is "cancelled the moment leadership is lost", the page says
// what no lease can promise: a leader paused past its lease learns of
// the loss only when it runs again, and may run one more job beside the
// next leader, which the term's fencing token lets the resource refuse.
func TestLeaderSnippetSaysAPausedLeaderMayRunOneMore(t *testing.T) {
	for _, page := range []string{"README.md", filepath.Join("docs", "leader-election.md")} {
		b, err := os.ReadFile(filepath.Join("..", "..", page))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		i := strings.Index(s, "errgroup.WithContext(lctx)")
		if i < 0 {
			t.Errorf("%s: no errgroup.WithContext(lctx): the test reads the wrong page", page)
			continue
		}
		end := strings.Index(s[i:], "\n```\n")
		if end < 0 {
			t.Errorf("%s: the block of errgroup.WithContext(lctx) does not end", page)
			continue
		}
		after := strings.TrimLeft(s[i+end+len("\n```\n"):], "\n")
		para, _, _ := strings.Cut(after, "\n\n")
		para = strings.Join(strings.Fields(para), " ")
		for _, want := range []string{"paused past its lease", "one more job", "leader.TermOf"} {
			if !strings.Contains(para, want) {
				t.Errorf("%s: the paragraph after the errgroup example does not say %q:\n%s", page, want, para)
			}
		}
	}
}
