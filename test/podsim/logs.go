package podsim

import (
	"bufio"
	"bytes"
	"io"
	"sync"

	"github.com/go-logr/logr"
)

// maxLogLine splits pathological unterminated output into bounded log entries.
const maxLogLine = 64 << 10

// drainLines logs each line of r and keeps the tail for termination messages.
// It reads until EOF so the child never blocks on a full pipe.
func drainLines(r io.Reader, log logr.Logger, tail *tailBuffer) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLogLine)
	sc.Split(splitLinesBounded)
	for sc.Scan() {
		line := sc.Bytes()
		tail.Write(line)
		tail.Write([]byte{'\n'})
		log.Info(string(line))
	}
	// Scanner errors only on read errors (pipe closed by drain timeout);
	// keep the pipe empty anyway so a writer is never stuck.
	_, _ = io.Copy(io.Discard, r)
}

// splitLinesBounded is bufio.ScanLines that emits a full buffer as a line
// instead of failing with ErrTooLong.
func splitLinesBounded(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, bytes.TrimSuffix(data[:i], []byte{'\r'}), nil
	}
	if len(data) >= maxLogLine || (atEOF && len(data) > 0) {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// tailBuffer keeps the last n bytes written, shared by stdout and stderr.
type tailBuffer struct {
	mu  sync.Mutex
	n   int
	buf []byte
}

func newTailBuffer(n int) *tailBuffer { return &tailBuffer{n: n} }

func (t *tailBuffer) Write(p []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.n; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
