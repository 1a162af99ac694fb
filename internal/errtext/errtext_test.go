package errtext

import (
	"errors"
	"fmt"
	"testing"
)

type serverError struct{ code int }

func (e serverError) Error() string {
	return "(InternalError) [msg_getmore.go:256 handler.(*Handler).MsgGetMore] [msg_getmore.go:335 handler.(*Handler).awaitData.func1] [collection.go:94 sqlite.(*collection).Query] interrupted (9)"
}

func TestTidy(t *testing.T) {
	server := serverError{9}
	err := fmt.Errorf("dsyncmongo: the wake-up event stream failed: %w", server)
	got := Tidy(err)
	if want := "dsyncmongo: the wake-up event stream failed: (InternalError) interrupted (9)"; got.Error() != want {
		t.Errorf("Tidy = %q, want %q", got, want)
	}
	var se serverError
	if !errors.As(got, &se) || se.code != 9 || !errors.Is(got, server) {
		t.Errorf("the tidied error hides the server's: As %v, Is %v", errors.As(got, &se), errors.Is(got, server))
	}
	plain := errors.New("dsync: TTL must be positive [see the docs]")
	if Tidy(plain) != plain {
		t.Errorf("Tidy changed an error without frames: %q", Tidy(plain))
	}
	if Tidy(nil) != nil {
		t.Error("Tidy(nil) is not nil")
	}
	if twice := Tidy(got); twice != got {
		t.Errorf("Tidy of a tidied error made another: %q", twice)
	}
}
