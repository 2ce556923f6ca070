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
	defaultRegisterTimeout = 60 * time.Second
	defaultGradingTimeout  = 5 * time.Minute
	defaultCleanupTimeout  = 10 * time.Second
)

// Stuck detection. A model that repeats itself burns the turn budget and
// tokens without progress; ending early as stuck_detected (self-graded 0)
// keeps that spend bounded and labels the failure honestly.
const (
	// stuckRepeatedCalls: the same agent tool call (name and canonical
	// arguments) this many times in a row. Only a different call breaks the
	// row; text turns in between do not.
	stuckRepeatedCalls = 5
	// stuckIdleTurns: this many consecutive agent turns with neither text nor
	// a tool call.
	stuckIdleTurns = 3
	// maxUserRounds bounds the user simulator's tool rounds and empty replies
	// before it produces a message for the agent.
	maxUserRounds = 8
)

func hasStop(s string) bool { return strings.Contains(s, StopMarker) }
