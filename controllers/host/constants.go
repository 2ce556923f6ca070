package host

import (
	"strings"
	"time"
)

// StopMarker ends the conversation when either side writes it. Matched
// case-sensitively anywhere in the message: the Python host lowercased the
// text before looking for the upper-case marker and so never saw it.
const StopMarker = "###STOP###"

// Defaults for zero AttemptConfig fields.
const (
	DefaultMaxTurns        = 30
	DefaultRegisterTimeout = 60 * time.Second
	DefaultGradingTimeout  = 5 * time.Minute
	DefaultCleanupTimeout  = 10 * time.Second
)

// Stuck detection. A model that repeats itself burns the turn budget and
// tokens without progress; ending early as stuck_detected (self-graded 0)
// keeps that spend bounded and labels the failure honestly.
const (
	// StuckRepeatedCalls: the same agent tool call (name and canonical
	// arguments) this many times in a row. Only a different call breaks the
	// row; text turns in between do not.
	StuckRepeatedCalls = 5
	// StuckIdleTurns: this many consecutive agent turns with neither text nor
	// a tool call.
	StuckIdleTurns = 3
	// MaxUserRounds bounds the user simulator's tool rounds and empty replies
	// before it produces a message for the agent.
	MaxUserRounds = 8
)

func hasStop(s string) bool { return strings.Contains(s, StopMarker) }
