package pyhost

import (
	"bufio"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/go-logr/logr"
)

// readLine reads lines of any length, keeps those up to its limit whole and
// drops (counting) longer ones, and leaves the reader at the next line.
func TestReadLineBoundsWhatItKeeps(t *testing.T) {
	long := strings.Repeat("x", 200_000)
	r := bufio.NewReaderSize(strings.NewReader("short\n"+long+"\n"+"after\n"+"no newline"), 4096)
	for i, want := range []answerLine{
		{b: []byte("short\n"), size: 6},
		{size: 200_001, over: true},
		{b: []byte("after\n"), size: 6},
	} {
		got, err := readLine(r, 100_000)
		if err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if string(got.b) != string(want.b) || got.size != want.size || got.over != want.over {
			t.Errorf("line %d = {%d bytes kept, size %d, over %v}, want {%q, size %d, over %v}", i, len(got.b), got.size, got.over, want.b, want.size, want.over)
		}
	}
	if _, err := readLine(r, 100_000); err != io.EOF {
		t.Errorf("a last line without its newline: err %v, want io.EOF", err)
	}
}

// drain reads stderr lines of any length to the end, keeping the last
// stderrTailLines lines, each cut to stderrLineCap bytes with a count of the
// rest.
func TestDrainKeepsABoundedTail(t *testing.T) {
	var in strings.Builder
	for i := range 20 {
		in.WriteString(strings.Repeat(string(rune('a'+i)), 10+i*10_000))
		in.WriteString("\n")
	}
	in.WriteString("last, without a newline")
	h := &Host{log: logr.Discard()}
	h.drain(strings.NewReader(in.String()))
	if len(h.tail) != stderrTailLines {
		t.Fatalf("tail holds %d lines, want %d", len(h.tail), stderrTailLines)
	}
	for i, line := range h.tail[:stderrTailLines-1] {
		n := 20 - stderrTailLines + 1 + i // the line's index in the input
		size := 10 + n*10_000
		want := strings.Repeat(string(rune('a'+n)), stderrLineCap) + " … [" + strconv.Itoa(size-stderrLineCap) + " more bytes]"
		if line != want {
			t.Errorf("tail[%d] = %.40q… (%d bytes), want line %d cut to %d bytes and its rest counted", i, line, len(line), n, stderrLineCap)
		}
	}
	if got := h.tail[stderrTailLines-1]; got != "last, without a newline" {
		t.Errorf("last tail line = %q", got)
	}
}
