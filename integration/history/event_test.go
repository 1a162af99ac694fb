package history

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestReadToleratesATruncatedLastLine(t *testing.T) {
	var buf bytes.Buffer
	buf.WriteString(`{"ev":"acquire","pid":1,"key":"k","tok":1,"t":5,"dl":9}` + "\n")
	buf.WriteString(`{"ev":"end","pid":1,"key":"k","tok":1,"t":6,"d`)
	evs, tr, err := Read(&buf)
	if err != nil || !tr || len(evs) != 1 {
		t.Fatalf("Read: %d events, truncated %v, err %v", len(evs), tr, err)
	}
	_, _, err = Read(strings.NewReader("{\"ev\":\"x\"\n{\"ev\":\"y\"}\n"))
	if err == nil {
		t.Fatal("a bad line in the middle was accepted")
	}
}

func TestWriterAppends(t *testing.T) {
	path := t.TempDir() + "/h.jsonl"
	for i := range 2 {
		w, err := Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(Event{Ev: EvStart, PID: i + 1, T: Now()}); err != nil {
			t.Fatal(err)
		}
		w.Close()
	}
	evs, tr, err := ReadFile(path)
	if err != nil || tr || len(evs) != 2 {
		t.Fatalf("ReadFile: %v %v %v", evs, tr, err)
	}
}

func TestMonoMatchesClockMonotonic(t *testing.T) {
	before := Now()
	m := Mono(time.Now())
	after := Now()
	if m < before-int64(time.Microsecond) || m > after+int64(time.Microsecond) {
		t.Fatalf("Mono(time.Now()) = %d, not within [%d, %d]", m, before, after)
	}
	if d := Mono(time.Now().Add(time.Second)) - Now(); d < int64(999*time.Millisecond) || d > int64(1001*time.Millisecond) {
		t.Fatalf("Mono(now+1s) − Now() = %v", time.Duration(d))
	}
}
