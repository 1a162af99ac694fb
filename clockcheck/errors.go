package clockcheck

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrNilDatabase is returned at once by [Measure], [Check] and
	// [NewEstimator] when given a nil database.
	ErrNilDatabase = errors.New("clockcheck: nil database")
	// ErrNoLocalTime matches the error returned when the server does
	// not tell its time. That is when neither its hello nor its
	// isMaster reply has a localTime date, or the commands fail on the
	// server.
	ErrNoLocalTime = errors.New("clockcheck: hello reply has no localTime date")
)

// OffsetError is returned by [Check] when the local wall clock is certainly
// too far off. That is when it is certainly further from the server's clock
// than the limit: |Offset| - Uncertainty > Limit.
type OffsetError struct {
	Offset      time.Duration // measured server time − local wall time
	Uncertainty time.Duration // bound on the error of Offset
	Limit       time.Duration // the maxOffset given to Check
}

func (e *OffsetError) Error() string {
	dir, d := "behind", e.Offset
	if d < 0 {
		dir, d = "ahead of", -d
	}
	return fmt.Sprintf("clockcheck: local clock is %v (±%v) %s the server's, more than the limit of %v",
		d, e.Uncertainty, dir, e.Limit)
}
