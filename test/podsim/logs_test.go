package podsim

import (
	"bufio"
	"strings"
	"testing"
)

func TestSplitLinesBounded(t *testing.T) {
	long := strings.Repeat("x", maxLogLine+10)
	cases := []struct {
		name string
		in   string
		want []int // token lengths
	}{
		{"lines", "ab\ncd\r\n", []int{2, 2}},
		{"unterminated tail", "ab\ncd", []int{2, 2}},
		{"overlong line split", long + "\n", []int{maxLogLine, 10}},
		{"empty", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sc := bufio.NewScanner(strings.NewReader(tc.in))
			sc.Buffer(make([]byte, 0, 16), maxLogLine)
			sc.Split(splitLinesBounded)
			var got []int
			for sc.Scan() {
				got = append(got, len(sc.Bytes()))
			}
			if sc.Err() != nil {
				t.Fatalf("scan error: %v", sc.Err())
			}
			if len(got) != len(tc.want) {
				t.Fatalf("tokens = %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("tokens = %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestTailBufferKeepsLastBytes(t *testing.T) {
	tb := newTailBuffer(8)
	tb.Write([]byte("hello "))
	tb.Write([]byte("world\n"))
	if got := tb.String(); got != "o world\n" {
		t.Fatalf("tail = %q, want %q", got, "o world\n")
	}
	drainLines(strings.NewReader("first\nsecond line\n"), discard, tb)
	if got := tb.String(); got != "nd line\n" {
		t.Fatalf("tail after drain = %q", got)
	}
}
