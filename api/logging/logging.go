// Package logging sets up the structured JSON logger of the binary's server
// subcommands (runner, dbservice), so both parse --log-level the same way.
//
// Imports: the standard library and github.com/go-logr/logr.
package logging

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// ParseLevel maps a --log-level value to a logr verbosity: error (-1, only
// errors), info (0), debug (1) or a verbosity >= 0.
func ParseLevel(s string) (int, error) {
	switch strings.ToLower(s) {
	case "error":
		return -1, nil
	case "info":
		return 0, nil
	case "debug":
		return 1, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("--log-level %q: want error, info, debug or a verbosity >= 0", s)
	}
	return n, nil
}

// New writes JSON lines to out; level -1 drops everything but errors.
func New(out io.Writer, level int) logr.Logger {
	var mu sync.Mutex
	l := funcr.NewJSON(func(obj string) {
		mu.Lock()
		defer mu.Unlock()
		_, _ = fmt.Fprintln(out, obj)
	}, funcr.Options{Verbosity: max(level, 0)})
	if level < 0 {
		return logr.New(errorsOnly{l.GetSink()})
	}
	return l
}

type errorsOnly struct{ logr.LogSink }

func (errorsOnly) Enabled(int) bool { return false }

func (e errorsOnly) WithValues(kv ...any) logr.LogSink {
	return errorsOnly{e.LogSink.WithValues(kv...)}
}

func (e errorsOnly) WithName(name string) logr.LogSink { return errorsOnly{e.LogSink.WithName(name)} }
