//go:build unix

package main

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// reserved are the characters a password must percent-encode in a
// connection string (RFC 3986's gen-delims and sub-delims, '%', and a
// space), each of which once ended or confused the redaction.
const reserved = ":/?#[]@!$&'()*+,;=% "

// Passwords are "Xq7" + c + "Zk9": neither half may show.
func leaks(s string) bool { return strings.Contains(s, "Xq7") || strings.Contains(s, "Zk9") }

// uriForms put a password into connection strings of every shape.
var uriForms = []struct{ name, before, after string }{
	{"host", "mongodb://alice:", "@db.example:27017"},
	{"host and slash", "mongodb://alice:", "@db.example:27017/"},
	{"database and options", "mongodb://alice:", "@db.example/app?authSource=admin&appName=x"},
	{"hosts", "mongodb://alice:", "@a.example:27017,b.example:27017/?replicaSet=rs0"},
	{"srv", "mongodb+srv://alice:", "@cluster.example/"},
	{"an @ in an option", "mongodb://alice:", "@db.example/?appName=me@there"},
	{"no scheme", "alice:", "@db.example/"},
}

func TestRedactHidesPasswordsWithEveryReservedCharacter(t *testing.T) {
	// The srv form's parse asks DNS for the host's SRV record, once a
	// password: where the resolver drops a query, seconds of waiting.
	t.Parallel()
	for _, f := range uriForms {
		for _, c := range reserved {
			for _, pw := range []string{"Xq7" + string(c) + "Zk9", url.PathEscape("Xq7" + string(c) + "Zk9"), url.QueryEscape("Xq7" + string(c) + "Zk9")} {
				uri := f.before + pw + f.after
				got := redact(uri)
				if leaks(got) || !strings.Contains(got, "alice") || !strings.Contains(got, "***") {
					t.Errorf("%s: redact(%q) = %q; want alice's password hidden", f.name, uri, got)
				}
				// What the driver says about the string, through uriError
				// and scrub, hides it too.
				err := options.Client().ApplyURI(uri).Validate()
				if err == nil {
					err = errors.New("cannot reach: " + uri) // an error quoting the whole string
					if msg := scrub(uri, err.Error()); leaks(msg) {
						t.Errorf("%s: scrub(%q, %q) = %q", f.name, uri, err, msg)
					}
					continue
				}
				if msg := uriError(uri, err).Error(); leaks(msg) {
					t.Errorf("%s: the parse error of %q is %q", f.name, uri, msg)
				}
			}
		}
	}
}

func TestRedactKeepsWhatIsNoSecret(t *testing.T) {
	for _, tc := range []struct{ uri, want string }{
		{"mongodb://127.0.0.1:27017/", "mongodb://127.0.0.1:27017/"},
		{"mongodb://alice@host/", "mongodb://alice@host/"},
		{"mongodb://alice:secret@host/db?w=majority", "mongodb://alice:***@host/db?w=majority"},
		{"mongodb://alice:p@ss@host/", "mongodb://alice:***@host/"},
		{"mongodb://alice@p@host/", "mongodb://alice@***@host/"},
		{"mongodb://h/?authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:tok", "mongodb://h/?authMechanism=MONGODB-AWS&authMechanismProperties=***"},
		{"mongodb://h/?tlsCertificateKeyFilePassword=pw&tls=true", "mongodb://h/?tlsCertificateKeyFilePassword=***&tls=true"},
		{"not a uri", "not a uri"},
	} {
		if got := redact(tc.uri); got != tc.want {
			t.Errorf("redact(%q) = %q, want %q", tc.uri, got, tc.want)
		}
	}
}

// The command's own errors, end to end: a connection string the driver
// rejects and one it accepts but cannot connect with.
func TestErrorsDoNotShowThePassword(t *testing.T) {
	t.Parallel()
	for _, c := range reserved {
		for _, after := range []string{"@127.0.0.1:1/", "@127.0.0.1:1/?appName=a@b"} {
			uri := "mongodb://alice:Xq7" + string(c) + "Zk9" + after
			r := runDsync(t, env(uri), "", slow(30*time.Second), "--timeout", "1s", "status")
			if r.code == 0 || leaks(r.stderr) || !strings.Contains(r.stderr, "alice:***@") {
				t.Errorf("dsync status with MONGODB_URI=%s: exit %d, stderr %q; want an error that hides the password", uri, r.code, r.stderr)
			}
		}
	}
}

func TestTidyDropsRepetitions(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"a: b", "a: b"},
		// A renewal's failure as the library logged it.
		{`renew "x": dsyncmongo: renew "x": connection(h:1[-3]) incomplete read of message header: connection closed unexpectedly by the other side: EOF: connection(h:1[-3]) incomplete read of message header: connection closed unexpectedly by the other side: EOF`,
			`renew "x": dsyncmongo: connection(h:1[-3]) incomplete read of message header: connection closed unexpectedly by the other side: EOF`},
		{"renew \"x\": context deadline exceeded: server selection error: context deadline exceeded",
			"renew \"x\": context deadline exceeded: server selection error"},
		{"server selection error: context deadline exceeded, current topology: { Type: Unknown, Servers: [{ Addr: h:1, Type: Unknown, Last error: dial tcp h:1: connect: connection refused }, ] }",
			"server selection error: context deadline exceeded"},
		{"two\nlines:  and   blanks", "two lines: and blanks"},
	} {
		if got := tidy(tc.in); got != tc.want {
			t.Errorf("tidy(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
