// Package errtext tidies the text of errors that servers send before
// dsync shows them to people: FerretDB puts its Go stack frames in its
// error messages ("(InternalError) [msg_getmore.go:256
// handler.(*Handler).MsgGetMore] ... interrupted (9)"), which say nothing
// to a user of dsync.
package errtext

import (
	"errors"
	"regexp"
)

// frame matches one stack frame of a FerretDB error message, with the
// space before it.
var frame = regexp.MustCompile(` ?\[[A-Za-z0-9_./-]+\.go:[0-9]+ [^\]]*\]`)

// Tidy returns err with the stack frames cut out of its text. The error
// returned wraps err: errors.Is and errors.As see everything err holds.
// It returns err itself when there is nothing to cut, and nil for nil.
func Tidy(err error) error {
	if err == nil {
		return nil
	}
	text := err.Error()
	tidy := frame.ReplaceAllString(text, "")
	if tidy == text {
		return err
	}
	var t *tidied
	if errors.As(err, &t) && t.text == tidy {
		return err
	}
	return &tidied{err: err, text: tidy}
}

type tidied struct {
	err  error
	text string
}

func (t *tidied) Error() string { return t.text }
func (t *tidied) Unwrap() error { return t.err }
