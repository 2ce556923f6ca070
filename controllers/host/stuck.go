package host

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"tolokaforge.io/operator/api/task"
)

// stuckDetector watches the agent's turns for the two stuck patterns.
type stuckDetector struct {
	last    lastCall
	repeats int
	idle    int
}

// lastCall is the previous agent call; its canonical arguments are computed
// only when a call of the same name with different text follows, so the
// common cases (another tool, or byte-identical arguments) parse nothing.
type lastCall struct {
	name, raw, canon string
	canonDone        bool
}

func (l *lastCall) canonical() string {
	if !l.canonDone {
		l.canon, l.canonDone = canonicalArgs(l.raw), true
	}
	return l.canon
}

// observe records one agent turn and says whether the trial is stuck, and
// why. It is consulted before the turn's tool calls run, so the call that
// completes a stuck row is never executed.
func (s *stuckDetector) observe(t Turn) (bool, string) {
	if strings.TrimSpace(t.Content) == "" && len(t.ToolCalls) == 0 {
		s.idle++
		if s.idle >= stuckIdleTurns {
			return true, fmt.Sprintf("%d agent turns in a row with neither text nor a tool call", s.idle)
		}
		return false, ""
	}
	s.idle = 0
	for _, c := range t.ToolCalls {
		cur := lastCall{name: c.Function.Name, raw: c.Function.Arguments}
		same := s.repeats > 0 && cur.name == s.last.name &&
			(cur.raw == s.last.raw || cur.canonical() == s.last.canonical())
		if same {
			s.repeats++
		} else {
			s.repeats = 1
		}
		s.last = cur
		if s.repeats >= stuckRepeatedCalls {
			return true, fmt.Sprintf("tool call %s with arguments %s %d times in a row",
				c.Function.Name, s.last.canonical(), s.repeats)
		}
	}
	return false, ""
}

// canonicalArgs makes argument strings that differ only in spacing or key
// order compare equal; anything that is not JSON compares as trimmed text.
func canonicalArgs(args string) string {
	if strings.TrimSpace(args) == "" {
		return "{}" // the runner reads "" as {}
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(args))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil || dec.More() {
		return strings.TrimSpace(args)
	}
	if v == nil {
		return "{}"
	}
	b, err := task.Encode(v)
	if err != nil {
		return strings.TrimSpace(args)
	}
	return string(bytes.TrimSpace(b))
}
