package testexec

import "testing"

func TestCappedBufferKeepsTheTail(t *testing.T) {
	b := &cappedBuffer{cap: 8}
	for _, s := range []string{"0123", "4567", "89ab", "cdefghijklmn"} {
		if _, err := b.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := string(b.buf), "ghijklmn"; got != want {
		t.Errorf("kept %q, want %q", got, want)
	}
	if got, want := b.tail(4), "[16 earlier bytes past the 8-byte output cap dropped] klmn"; got != want {
		t.Errorf("tail = %q, want %q", got, want)
	}
}
