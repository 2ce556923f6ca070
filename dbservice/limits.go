package dbservice

import (
	"fmt"
	"net/http"
	"time"
)

// Limits bound what one request, one trial and the whole process may cost. A zero field
// takes its default (DefaultLimits); every refusal names the limit and its value and
// leaves the trial as it was.
type Limits struct {
	// MaxBodyBytes bounds a request body (413 PayloadTooLarge).
	MaxBodyBytes int64
	// MaxNumberDigits bounds the digits of one number literal in a body (400
	// InvalidJSON): a 4-million-digit integer costs tens of CPU seconds to convert.
	MaxNumberDigits int
	// MaxOpsPerPatch bounds the operations of one PATCH (413 PayloadTooLarge).
	MaxOpsPerPatch int
	// MaxQueryResponseBytes bounds the serialized results of one query (422
	// LimitExceeded); serialization stops as soon as it is crossed.
	MaxQueryResponseBytes int64
	// MaxTablesPerTrial, MaxRecordsPerTrial and MaxTrialBytes bound a trial's current
	// state: its tables, its records, and its records' canonical bytes (422 LimitExceeded).
	MaxTablesPerTrial  int
	MaxRecordsPerTrial int
	MaxTrialBytes      int64
	// MaxSnapshotsPerTrial bounds the named snapshots of one trial (422 LimitExceeded).
	MaxSnapshotsPerTrial int
	// MaxTrials bounds the trials held by the process (507 LimitExceeded).
	MaxTrials int
	// MaxTotalBytes bounds the memory accounted to all trials together (507
	// LimitExceeded): each trial's current state, plus its initial state and every
	// snapshot that differs from it, in canonical bytes.
	MaxTotalBytes int64
	// ReadHeaderTimeout bounds reading a request's headers; BodyReadTimeout bounds
	// reading its body (408 RequestTimeout), so a stalled client cannot hold a handler.
	ReadHeaderTimeout time.Duration
	BodyReadTimeout   time.Duration
}

// defaultLimits are the limits a zero Limits field takes.
var defaultLimits = Limits{
	MaxBodyBytes:          defaultMaxBodyBytes,
	MaxNumberDigits:       4300, // CPython's default int_max_str_digits
	MaxOpsPerPatch:        10_000,
	MaxQueryResponseBytes: 32 << 20,
	MaxTablesPerTrial:     1_000,
	MaxRecordsPerTrial:    1_000_000,
	MaxTrialBytes:         256 << 20,
	MaxSnapshotsPerTrial:  1_000,
	MaxTrials:             10_000,
	MaxTotalBytes:         4 << 30,
	ReadHeaderTimeout:     10 * time.Second,
	BodyReadTimeout:       60 * time.Second,
}

// withDefaults returns l with every zero field set to its default.
func (l Limits) withDefaults() Limits {
	d := defaultLimits
	set := func(v *int64, def int64) {
		if *v <= 0 {
			*v = def
		}
	}
	seti := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	setd := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&l.MaxBodyBytes, d.MaxBodyBytes)
	seti(&l.MaxNumberDigits, d.MaxNumberDigits)
	seti(&l.MaxOpsPerPatch, d.MaxOpsPerPatch)
	set(&l.MaxQueryResponseBytes, d.MaxQueryResponseBytes)
	seti(&l.MaxTablesPerTrial, d.MaxTablesPerTrial)
	seti(&l.MaxRecordsPerTrial, d.MaxRecordsPerTrial)
	set(&l.MaxTrialBytes, d.MaxTrialBytes)
	seti(&l.MaxSnapshotsPerTrial, d.MaxSnapshotsPerTrial)
	seti(&l.MaxTrials, d.MaxTrials)
	set(&l.MaxTotalBytes, d.MaxTotalBytes)
	setd(&l.ReadHeaderTimeout, d.ReadHeaderTimeout)
	setd(&l.BodyReadTimeout, d.BodyReadTimeout)
	return l
}

// errLimit is a refusal for crossing the limit name (its wire and flag spelling with
// underscores) of value limit; actual, when known, is what the request would have reached.
func errLimit(status int, typ, name string, limit, actual int64, format string, args ...any) *Error {
	details := map[string]any{"limit": name, "limit_value": limit}
	if actual >= 0 {
		details["actual"] = actual
	}
	return newError(status, typ, details, "%s (limit %s=%d)", fmt.Sprintf(format, args...), name, limit)
}

// errTrialLimit refuses a change that would take a trial over one of its limits.
func errTrialLimit(name string, limit, actual int64, what string) *Error {
	return errLimit(http.StatusUnprocessableEntity, errTypeLimitExceeded, name, limit, actual,
		"the trial would hold %d %s, more than allowed", actual, what)
}
