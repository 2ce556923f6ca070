package campaign

import (
	"testing"
	"time"
)

func TestExpectations(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e := newExpectations(time.Minute, func() time.Time { return clock })
	cell := Cell{Agent: "a", Task: "t"}
	e.expect("c1", "x-1", cell)
	e.expect("c1", "x-0", cell)
	e.expect("c2", "y-0", cell)

	none := func(string) bool { return false }
	if got := e.pending("c1", none); len(got) != 2 || got[0].Name != "x-0" || got[1].Name != "x-1" {
		t.Fatalf("pending %+v", got)
	}
	// Seen by the cache: dropped for good.
	if got := e.pending("c1", func(n string) bool { return n == "x-0" }); len(got) != 1 || got[0].Name != "x-1" {
		t.Fatalf("pending after x-0 seen %+v", got)
	}
	if got := e.pending("c1", none); len(got) != 1 {
		t.Fatalf("x-0 came back: %+v", got)
	}
	e.forget("c1", "x-1")
	if got := e.pending("c1", none); len(got) != 0 {
		t.Fatalf("forgotten creation still pending: %+v", got)
	}
	// Expiry.
	clock = clock.Add(time.Minute + time.Second)
	if got := e.pending("c2", none); len(got) != 0 {
		t.Fatalf("expired creation still pending: %+v", got)
	}
	e.expect("c3", "z", cell)
	e.clear("c3")
	if got := e.pending("c3", none); len(got) != 0 {
		t.Fatalf("cleared campaign still pending: %+v", got)
	}
}
