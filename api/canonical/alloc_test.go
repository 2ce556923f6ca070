package canonical

import (
	"io"
	"strings"
	"testing"
)

// WriteTo reuses its stream buffer: hashing a small table must not allocate
// a fresh 64 KiB buffer each time (it was a trial's largest allocator).
func TestWriteToReusesItsBuffer(t *testing.T) {
	v, err := Parse([]byte(`[{"id":"P-001","price":89.99,"tags":["a","b"]},{"id":"P-002","price":34.5}]`))
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(200, func() {
		if err := writeTo(io.Discard, v); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("WriteTo of a small value: %v allocations per call, want 0", n)
	}
	// The reused buffer carries nothing from one call into the next.
	var a, b strings.Builder
	big, err := Parse([]byte(`{"k":"` + strings.Repeat("x", 3*flushAt) + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := writeTo(&a, big); err != nil {
		t.Fatal(err)
	}
	if err := writeTo(&b, v); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), string(Marshal(v)); got != want {
		t.Errorf("after a large value, WriteTo wrote %q, want %q", got, want)
	}
	if got, want := a.String(), string(Marshal(big)); got != want {
		t.Errorf("large value: WriteTo wrote %d bytes, want %d", len(got), len(want))
	}
}
