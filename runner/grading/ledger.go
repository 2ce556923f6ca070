package grading

import (
	"fmt"
	"sort"
	"strings"

	"tolokaforge.io/operator/api/task"
)

// scoredKey is one entry of the ledger's manifest: an author-facing grading.yaml key
// whose evaluator produces part of a component score, the component it scores and the
// runner evaluator expected to account for it. Config inputs (state_checks.id_fields,
// numeric_string_fields, relaxed_validation, hash_weight) and the aggregation keys
// (combine_method, weights, pass_threshold) shape other checks and are not here.
type scoredKey struct {
	key       string
	component string
	evaluator string
	populated func(*task.GradingConfig) bool
}

func stateKey(key, evaluator string, populated func(*task.StateChecks) bool) scoredKey {
	return scoredKey{key: "state_checks." + key, component: task.ComponentStateChecks, evaluator: evaluator,
		populated: func(g *task.GradingConfig) bool { return g.StateChecks != nil && populated(g.StateChecks) }}
}

func transcriptKey(key string, populated func(*task.TranscriptRules) bool) scoredKey {
	return scoredKey{key: "transcript_rules." + key, component: task.ComponentTranscriptRules, evaluator: evalTranscript,
		populated: func(g *task.GradingConfig) bool { return g.TranscriptRules != nil && populated(g.TranscriptRules) }}
}

// traceKindKey is trace_checks.constraints.<kind>: populated when the kind is written
// in the top-level constraints, at the top or inside a require tree. A kind written
// only inside an alternative is covered by trace_checks.alternatives instead.
func traceKindKey(kind task.TraceKind) scoredKey {
	return scoredKey{key: traceKeyPrefix + string(kind), component: task.ComponentTraceChecks, evaluator: evalTraceChecks,
		populated: func(g *task.GradingConfig) bool {
			if g.TraceChecks == nil {
				return false
			}
			for i := range g.TraceChecks.Constraints {
				for c := &g.TraceChecks.Constraints[i]; c != nil; c = c.Require {
					if c.Kind == kind {
						return true
					}
				}
			}
			return false
		}}
}

// manifest lists every scored key. "Populated" means non-empty, not merely present.
var manifest = []scoredKey{
	stateKey("hash_enabled", evalHash, func(s *task.StateChecks) bool { return s.HashEnabled }),
	stateKey("golden_actions", evalHash, func(s *task.StateChecks) bool { return len(s.GoldenActions) > 0 }),
	stateKey("expected_hash", evalHash, func(s *task.StateChecks) bool { return s.ExpectedHash != nil && *s.ExpectedHash != "" }),
	stateKey("jsonpaths", evalJSONPath, func(s *task.StateChecks) bool { return len(s.JSONPaths) > 0 }),
	stateKey("db_probes", evalDBProbes, func(s *task.StateChecks) bool { return len(s.DBProbes) > 0 }),
	transcriptKey("must_contain", func(t *task.TranscriptRules) bool { return len(t.MustContain) > 0 }),
	transcriptKey("disallow_regex", func(t *task.TranscriptRules) bool { return len(t.DisallowRegex) > 0 }),
	transcriptKey("max_turns", func(t *task.TranscriptRules) bool { return t.MaxTurns != nil }),
	transcriptKey("min_assistant_turns", func(t *task.TranscriptRules) bool { return t.MinAssistantTurns != nil }),
	transcriptKey("required_actions", func(t *task.TranscriptRules) bool { return len(t.RequiredActions) > 0 }),
	transcriptKey("communicate_info", func(t *task.TranscriptRules) bool { return len(t.CommunicateInfo) > 0 }),
	traceKindKey(task.TraceOccurs), traceKindKey(task.TraceAbsent), traceKindKey(task.TracePrecedes),
	traceKindKey(task.TraceResponds), traceKindKey(task.TraceImmediatelyFollows), traceKindKey(task.TraceOrder),
	traceKindKey(task.TraceFirst), traceKindKey(task.TraceLast), traceKindKey(task.TraceBetween),
	traceKindKey(task.TraceUnique),
	{key: "trace_checks.alternatives", component: task.ComponentTraceChecks, evaluator: evalTraceChecks,
		populated: func(g *task.GradingConfig) bool { return g.TraceChecks != nil && len(g.TraceChecks.Alternatives) > 0 }},
	{key: "llm_judge", component: task.ComponentLLMJudge, evaluator: evalLLMJudge,
		populated: func(g *task.GradingConfig) bool { return g.LLMJudge != nil }},
	{key: "custom_checks.checks", component: task.ComponentCustomChecks, evaluator: evalCustomChecks,
		populated: func(g *task.GradingConfig) bool { return g.CustomChecks != nil && len(g.CustomChecks.Checks) > 0 }},
	{key: "custom_checks.file", component: task.ComponentCustomChecks, evaluator: evalCustomChecks,
		populated: func(g *task.GradingConfig) bool { return g.CustomChecks != nil && g.CustomChecks.File != "" }},
}

// populatedKeys returns the manifest entries cfg populates within the requested
// components, in manifest order.
func populatedKeys(cfg *task.GradingConfig, inScope func(component string) bool) []scoredKey {
	var out []scoredKey
	for _, k := range manifest {
		if inScope(k.component) && k.populated(cfg) {
			out = append(out, k)
		}
	}
	return out
}

// skipNote is a recorded skip: the keys an evaluator deliberately did not score, and why.
type skipNote struct {
	reason string
	keys   []string
}

// ledger records, at every point an evaluator runs or is deliberately skipped, which
// scored keys that call accounts for.
type ledger struct {
	accounted map[string]bool
	skips     []skipNote
}

func newLedger() *ledger { return &ledger{accounted: map[string]bool{}} }

// evaluated records keys an evaluator scored.
func (l *ledger) evaluated(keys ...string) {
	for _, k := range keys {
		l.accounted[k] = true
	}
}

// skipped records keys deliberately left unscored; the reason lands in Grade.reasons.
func (l *ledger) skipped(reason string, keys ...string) {
	if len(keys) == 0 {
		return
	}
	for _, k := range keys {
		l.accounted[k] = true
	}
	l.skips = append(l.skips, skipNote{reason: reason, keys: keys})
}

// check subtracts the accounted keys from the populated ones; any remainder would have
// contributed nothing while the trial still received a grade, so it fails the RPC naming
// each key and the evaluator its manifest entry expects.
func (l *ledger) check(populated []scoredKey, registered func(name string) bool) error {
	var missing []string
	for _, k := range populated {
		if l.accounted[k.key] {
			continue
		}
		why := "which neither evaluated nor skipped it"
		if !registered(k.evaluator) {
			why = "which this runner does not implement yet"
		}
		missing = append(missing, fmt.Sprintf("%s (expects runner evaluator %s, %s)", k.key, k.evaluator, why))
	}
	if len(missing) == 0 {
		return nil
	}
	return &Error{Msg: "Grading config populates scored keys the runner neither evaluated nor recorded a skip for: " + strings.Join(missing, "; ")}
}

// notes renders the recorded skips for Grade.reasons, one per reason, keys sorted.
func (l *ledger) notes() []string {
	var out []string
	for _, s := range l.skips {
		keys := append([]string(nil), s.keys...)
		sort.Strings(keys)
		out = append(out, fmt.Sprintf("%s: skipped: %s", strings.Join(keys, ", "), s.reason))
	}
	return out
}
