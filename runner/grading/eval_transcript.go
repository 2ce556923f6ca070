package grading

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"tolokaforge.io/operator/api/canonical"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/grading/timeline"
)

// transcriptEvaluator scores transcript_rules over the timeline. Each rule instance
// (each list item, each scalar limit) counts once; score = passed / total. On a timeline
// with no events every rule but min_assistant_turns is a recorded skip: scoring 0.0
// against evidence that does not exist would be a lie, while absence is exactly what
// min_assistant_turns asks about.
type transcriptEvaluator struct{}

func (transcriptEvaluator) Name() string      { return evalTranscript }
func (transcriptEvaluator) Component() string { return task.ComponentTranscriptRules }

type ruleOutcome = checkOutcome

func (transcriptEvaluator) Evaluate(_ context.Context, g *gradeCtx) (verdict, error) {
	tr := g.cfg.TranscriptRules
	keys := g.keysFor(evalTranscript)
	if tr == nil || len(keys) == 0 {
		return verdict{}, nil
	}
	tl := g.timeline
	var rules []ruleOutcome
	if tl.Empty() {
		var skipped []string
		for _, k := range keys {
			if k != "transcript_rules.min_assistant_turns" {
				skipped = append(skipped, k)
			}
		}
		g.ledger.skipped(skipEmptyTimeline, skipped...)
		if tr.MinAssistantTurns == nil {
			return verdict{}, nil
		}
		rules = append(rules, minAssistantTurns(tl, *tr.MinAssistantTurns))
		g.ledger.evaluated("transcript_rules.min_assistant_turns")
		return scoreRules(rules), nil
	}

	assistant := tl.AssistantMessages()
	for i, s := range tr.MustContain {
		o := ruleOutcome{label: fmt.Sprintf("must_contain[%d]", i), passed: anyContainsFold(assistant, s)}
		if !o.passed {
			o.msg = fmt.Sprintf("no assistant message contains %q", s)
		}
		rules = append(rules, o)
	}
	for i, re := range g.plan.disallow {
		o := ruleOutcome{label: fmt.Sprintf("disallow_regex[%d]", i), passed: true}
		for _, e := range tl.Events {
			if e.Kind != task.EventMessage || e.Role != task.RoleAssistant {
				continue
			}
			if loc := re.FindStringIndex(e.Content); loc != nil {
				o.passed = false
				o.msg = fmt.Sprintf("%q matched %q in the assistant message at position %d", re.String(), e.Content[loc[0]:loc[1]], e.Position)
				break
			}
		}
		rules = append(rules, o)
	}
	if tr.MaxTurns != nil {
		o := ruleOutcome{label: "max_turns", passed: len(assistant) <= *tr.MaxTurns}
		if !o.passed {
			o.msg = fmt.Sprintf("%d assistant turns exceed the limit of %d", len(assistant), *tr.MaxTurns)
		}
		rules = append(rules, o)
	}
	if tr.MinAssistantTurns != nil {
		rules = append(rules, minAssistantTurns(tl, *tr.MinAssistantTurns))
	}
	for i := range tr.RequiredActions {
		rules = append(rules, requiredAction(g, &tr.RequiredActions[i]))
	}
	for i, ci := range tr.CommunicateInfo {
		if ci.Required != nil && !*ci.Required {
			continue // informational: an optional item is no rule to pass or fail
		}
		o := ruleOutcome{label: fmt.Sprintf("communicate_info[%d]", i), passed: anyContainsFold(assistant, ci.Info)}
		if !o.passed {
			o.msg = fmt.Sprintf("%q was never communicated in an assistant message", ci.Info)
		}
		rules = append(rules, o)
	}
	g.ledger.evaluated(keys...)
	if len(rules) == 0 {
		return verdict{}, nil
	}
	return scoreRules(rules), nil
}

func scoreRules(rules []ruleOutcome) verdict {
	passed := 0
	var failed []string
	for _, r := range rules {
		if r.passed {
			passed++
		} else {
			failed = append(failed, r.label+": "+r.msg)
		}
	}
	v := verdict{scored: true, score: float64(passed) / float64(len(rules))}
	if len(failed) == 0 {
		v.segment = fmt.Sprintf("Transcript: all %d rules passed", len(rules))
	} else {
		v.segment = fmt.Sprintf("Transcript: %d of %d rules failed: %s", len(failed), len(rules), strings.Join(failed, "; "))
	}
	return v
}

func minAssistantTurns(tl *timeline.Timeline, n int) ruleOutcome {
	got := len(tl.AssistantMessages())
	o := ruleOutcome{label: "min_assistant_turns", passed: got >= n}
	if !o.passed {
		o.msg = fmt.Sprintf("%d assistant turns, fewer than the %d required", got, n)
	}
	return o
}

func anyContainsFold(messages []string, s string) bool {
	needle := strings.ToLower(s)
	for _, m := range messages {
		if strings.Contains(strings.ToLower(m), needle) {
			return true
		}
	}
	return false
}

// requiredAction passes when a successful call by the requestor to the named tool
// (resolved like a golden action, against the requestor's registry) carries the
// compared arguments: compare_args absent = every argument the rule gives, [] = the
// name only, a list = those keys.
func requiredAction(g *gradeCtx, a *task.RequiredAction) ruleOutcome {
	o := ruleOutcome{label: fmt.Sprintf("required_actions[%s]", a.ActionID)}
	requestor := a.Requestor
	if requestor == "" {
		requestor = task.RequestorAssistant
	}
	executor, registered, actor := task.ExecutorAgent, g.env.AgentTools(), "agent"
	if requestor == task.RequestorUser {
		executor, registered, actor = task.ExecutorUser, g.env.UserTools(), "user"
	}
	tool, matches := resolveTool(a.ToolName, registered)
	if tool == "" {
		o.msg = fmt.Sprintf("tool %q %s", a.ToolName, unresolvedReason(a.ToolName, matches, actor))
		return o
	}
	want, err := parseArgs(a.Arguments)
	if err != nil {
		o.msg = fmt.Sprintf("arguments do not parse: %v", err)
		return o
	}
	keys := want.Keys()
	if a.CompareArgs != nil {
		keys = *a.CompareArgs
	}
	calls, successes := 0, 0
	for _, e := range g.timeline.Events {
		if e.Kind != task.EventToolCall || e.Executor != executor || e.Tool != tool {
			continue
		}
		calls++
		if e.Status != task.ToolCallSuccess {
			continue
		}
		successes++
		got, err := parseArgs(e.Args)
		if err != nil {
			continue
		}
		if argsMatch(want, got, keys) {
			o.passed = true
			return o
		}
	}
	switch {
	case calls == 0:
		o.msg = fmt.Sprintf("no %s call to %s", requestor, tool)
	case successes == 0:
		o.msg = fmt.Sprintf("%d %s call(s) to %s, none successful", calls, requestor, tool)
	default:
		o.msg = fmt.Sprintf("no successful %s call to %s with %s", requestor, tool, describeArgs(want, keys))
	}
	return o
}

func parseArgs(raw []byte) (canonical.Object, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return canonical.NewObject(), nil
	}
	v, err := canonical.Parse(raw)
	if err != nil {
		return canonical.Object{}, err
	}
	o, ok := v.(canonical.Object)
	if !ok {
		return canonical.Object{}, fmt.Errorf("arguments are %s, not an object", v.Kind())
	}
	return o, nil
}

// argsMatch compares the keys asked for; a key absent on both sides is equal, absent on
// one side is not.
func argsMatch(want, got canonical.Object, keys []string) bool {
	for _, k := range keys {
		w, inW := want.Get(k)
		v, inG := got.Get(k)
		if inW != inG || (inW && !canonical.Equal(w, v)) {
			return false
		}
	}
	return true
}

func describeArgs(want canonical.Object, keys []string) string {
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v, ok := want.Get(k)
		if !ok {
			parts = append(parts, k+" absent")
			continue
		}
		parts = append(parts, k+"="+show(v))
	}
	return strings.Join(parts, ", ")
}
