package grading

import (
	"fmt"
	"sort"
	"strings"

	"tolokaforge.io/operator/api/canonical"
	"tolokaforge.io/operator/api/task"
)

// traceOutcome is one constraint's verdict before it becomes a TraceConstraintResult.
// passed and undecided are never both true; msg is empty on a pass.
type traceOutcome struct {
	passed, undecided bool
	msg               string
	positions         []int // the positions that decided it
}

func failed(positions []int, format string, args ...any) traceOutcome {
	return traceOutcome{msg: fmt.Sprintf(format, args...), positions: positions}
}

func undecided(positions []int, format string, args ...any) traceOutcome {
	return traceOutcome{undecided: true, msg: fmt.Sprintf(format, args...), positions: positions}
}

func passedAt(positions []int) traceOutcome {
	return traceOutcome{passed: true, positions: positions}
}

// evalKind decides a constraint that carries no binding, under env.
func (v *traceView) evalKind(c *task.TraceConstraint, env bindings) (traceOutcome, error) {
	switch c.Kind {
	case task.TraceOccurs:
		return v.occurs(c, env)
	case task.TraceAbsent:
		pos, err := v.positions(c.Match, env)
		if err != nil || len(pos) == 0 {
			return passedAt(nil), err
		}
		return failed(pos, "expected no event matching %s, found %d at %s", describeSelector(c.Match), len(pos), describePositions(pos)), nil
	case task.TracePrecedes:
		return v.precedes(c, env)
	case task.TraceResponds:
		return v.responds(c, env)
	case task.TraceImmediatelyFollows:
		return v.immediatelyFollows(c, env)
	case task.TraceOrder:
		return v.order(c, env)
	case task.TraceFirst, task.TraceLast:
		return v.firstLast(c, env)
	case task.TraceBetween:
		return v.between(c, env)
	case task.TraceUnique:
		return v.unique(c, env)
	}
	return traceOutcome{}, fmt.Errorf("kind %q is not one of the ten constraint kinds", c.Kind)
}

// bounds renders min/max for a message: "at least 1", "exactly 2", "between 1 and 3".
func bounds(minimum int, maximum *int) string {
	switch {
	case maximum == nil:
		return fmt.Sprintf("at least %d", minimum)
	case *maximum == minimum:
		return fmt.Sprintf("exactly %d", minimum)
	default:
		return fmt.Sprintf("between %d and %d", minimum, *maximum)
	}
}

func within(n, minimum int, maximum *int) bool {
	return n >= minimum && (maximum == nil || n <= *maximum)
}

func minOf(c *task.TraceConstraint) int {
	if c.Min == nil {
		return task.DefaultTraceMin
	}
	return *c.Min
}

func (v *traceView) occurs(c *task.TraceConstraint, env bindings) (traceOutcome, error) {
	pos, err := v.positions(c.Match, env)
	if err != nil {
		return traceOutcome{}, err
	}
	if within(len(pos), minOf(c), c.Max) {
		return passedAt(pos), nil
	}
	return failed(pos, "expected %s event(s) matching %s, found %d%s",
		bounds(minOf(c), c.Max), describeSelector(c.Match), len(pos), atPositions(pos)), nil
}

func (v *traceView) precedes(c *task.TraceConstraint, env bindings) (traceOutcome, error) {
	firsts, err := v.positions(c.First, env)
	if err != nil {
		return traceOutcome{}, err
	}
	thens, err := v.positions(c.Then, env)
	if err != nil {
		return traceOutcome{}, err
	}
	var orphans []int
	for _, t := range thens {
		if len(firsts) == 0 || firsts[0] >= t {
			orphans = append(orphans, t)
		}
	}
	if len(orphans) == 0 {
		if len(thens) == 0 {
			return passedAt(nil), nil
		}
		return passedAt(sortedUnion([]int{firsts[0]}, thens)), nil
	}
	return failed(orphans, "the event at position %d matches then %s with no earlier event matching first %s%s",
		orphans[0], describeSelector(c.Then), describeSelector(c.First), andMore(len(orphans)-1, "such event")), nil
}

func (v *traceView) responds(c *task.TraceConstraint, env bindings) (traceOutcome, error) {
	triggers, err := v.positions(c.Trigger, env)
	if err != nil {
		return traceOutcome{}, err
	}
	responses, err := v.positions(c.Response, env)
	if err != nil {
		return traceOutcome{}, err
	}
	var unanswered, decided []int
	for _, t := range triggers {
		// The first response after the trigger is the nearest one, so it alone decides
		// whether the window holds one.
		k := sort.SearchInts(responses, t+1)
		if k < len(responses) && (c.Within == nil || responses[k]-t <= *c.Within) {
			decided = append(decided, t, responses[k])
			continue
		}
		unanswered = append(unanswered, t)
	}
	if len(unanswered) == 0 {
		return passedAt(sortedUnion(decided)), nil
	}
	window := ""
	if c.Within != nil {
		window = fmt.Sprintf(" within %d events", *c.Within)
	}
	return failed(unanswered, "the trigger at position %d matching %s has no response matching %s%s%s",
		unanswered[0], describeSelector(c.Trigger), describeSelector(c.Response), window, andMore(len(unanswered)-1, "unanswered trigger")), nil
}

func (v *traceView) immediatelyFollows(c *task.TraceConstraint, env bindings) (traceOutcome, error) {
	triggers, err := v.positions(c.Trigger, env)
	if err != nil {
		return traceOutcome{}, err
	}
	var bad, decided []int
	var first string
	for _, t := range triggers {
		if t+1 >= len(v.events) {
			bad = append(bad, t)
			if first == "" {
				first = fmt.Sprintf("the trigger at position %d matching %s is the last event, so nothing follows it", t, describeSelector(c.Trigger))
			}
			continue
		}
		ok, err := v.matches(c.Next, t+1, env)
		if err != nil {
			return traceOutcome{}, err
		}
		if !ok {
			bad = append(bad, t)
			if first == "" {
				first = fmt.Sprintf("the event at position %d right after the trigger at position %d does not match next %s", t+1, t, describeSelector(c.Next))
			}
			continue
		}
		decided = append(decided, t, t+1)
	}
	if len(bad) == 0 {
		return passedAt(sortedUnion(decided)), nil
	}
	return failed(bad, "%s%s", first, andMore(len(bad)-1, "such trigger")), nil
}

func (v *traceView) order(c *task.TraceConstraint, env bindings) (traceOutcome, error) {
	var found []int
	next := 0
	for step := range c.Sequence {
		hit := -1
		for i := next; i < len(v.events); i++ {
			ok, err := v.matches(&c.Sequence[step], i, env)
			if err != nil {
				return traceOutcome{}, err
			}
			if ok {
				hit = i
				break
			}
		}
		if hit < 0 {
			if step == 0 {
				return failed(found, "sequence[0] %s matches no event", describeSelector(&c.Sequence[0])), nil
			}
			return failed(found, "sequence[%d] %s matches no event after position %d, where sequence[%d] matched",
				step, describeSelector(&c.Sequence[step]), found[len(found)-1], step-1), nil
		}
		found = append(found, hit)
		next = hit + 1
	}
	return passedAt(found), nil
}

func (v *traceView) firstLast(c *task.TraceConstraint, env bindings) (traceOutcome, error) {
	scope, err := v.positions(c.Scope, env)
	if err != nil {
		return traceOutcome{}, err
	}
	if len(scope) == 0 {
		// With no event in scope there is no first or last one to judge.
		return undecided(nil, "no event matches scope %s", describeSelector(c.Scope)), nil
	}
	at := scope[0]
	if c.Kind == task.TraceLast {
		at = scope[len(scope)-1]
	}
	ok, err := v.matches(c.Match, at, env)
	if err != nil {
		return traceOutcome{}, err
	}
	if ok {
		return passedAt([]int{at}), nil
	}
	return failed([]int{at}, "the %s event matching scope %s (position %d) does not match %s",
		c.Kind, describeSelector(c.Scope), at, describeSelector(c.Match)), nil
}

func (v *traceView) between(c *task.TraceConstraint, env bindings) (traceOutcome, error) {
	afters, err := v.positions(c.After, env)
	if err != nil {
		return traceOutcome{}, err
	}
	if len(afters) == 0 {
		return undecided(nil, "no event matches after %s, so the window never opens", describeSelector(c.After)), nil
	}
	a := afters[0]
	b := -1
	for i := a + 1; i < len(v.events); i++ {
		ok, err := v.matches(c.Before, i, env)
		if err != nil {
			return traceOutcome{}, err
		}
		if ok {
			b = i
			break
		}
	}
	if b < 0 {
		return undecided([]int{a}, "no event matching before %s follows the after event at position %d, so the window never closes",
			describeSelector(c.Before), a), nil
	}
	var inside []int
	for i := a + 1; i < b; i++ {
		ok, err := v.matches(c.Match, i, env)
		if err != nil {
			return traceOutcome{}, err
		}
		if ok {
			inside = append(inside, i)
		}
	}
	decided := sortedUnion([]int{a, b}, inside)
	if within(len(inside), minOf(c), c.Max) {
		return passedAt(decided), nil
	}
	return failed(decided, "expected %s event(s) matching %s between positions %d and %d, found %d%s",
		bounds(minOf(c), c.Max), describeSelector(c.Match), a, b, len(inside), atPositions(inside)), nil
}

func (v *traceView) unique(c *task.TraceConstraint, env bindings) (traceOutcome, error) {
	pos, err := v.positions(c.Match, env)
	if err != nil {
		return traceOutcome{}, err
	}
	seen := map[string]int{}
	for _, p := range pos {
		v.parse(p)
		var key strings.Builder
		for _, k := range c.By {
			if val, ok := v.args[p].Get(k); ok {
				key.Write(canonical.Marshal(val))
			} else {
				key.WriteString("<absent>")
			}
			key.WriteByte(0)
		}
		if prev, dup := seen[key.String()]; dup {
			return failed([]int{prev, p}, "the events at positions %d and %d match %s and share %s",
				prev, p, describeSelector(c.Match), v.describeBy(p, c.By)), nil
		}
		seen[key.String()] = p
	}
	return passedAt(pos), nil
}

func (v *traceView) describeBy(p int, by []string) string {
	parts := make([]string, len(by))
	for i, k := range by {
		if val, ok := v.args[p].Get(k); ok {
			parts[i] = k + "=" + show(val)
		} else {
			parts[i] = k + " absent"
		}
	}
	return strings.Join(parts, ", ")
}

// describeSelector renders a selector for a reason message: its keys in a fixed order.
func describeSelector(s *task.Selector) string {
	if s == nil {
		return "{}"
	}
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	add("event", string(s.Event))
	add("role", s.Role)
	add("executor", s.Executor)
	add("tool", s.Tool)
	if len(s.Args) > 0 {
		add("args", rawObject(s.Args))
	}
	add("status", s.Status)
	if s.ContentMatches != "" {
		add("content_matches", fmt.Sprintf("%q", s.ContentMatches))
	}
	if len(s.Result) > 0 {
		add("result", rawObject(s.Result))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func rawObject[V ~[]byte](m map[string]V) string {
	keys := sortedSelectorKeys(m)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(canonical.AppendString(nil, k))
		b.WriteByte(':')
		if c, err := canonical.Canonicalize(m[k]); err == nil {
			b.Write(c)
		} else {
			b.Write(m[k])
		}
	}
	b.WriteByte('}')
	return b.String()
}

func describePositions(pos []int) string {
	if len(pos) == 1 {
		return fmt.Sprintf("position %d", pos[0])
	}
	s := make([]string, len(pos))
	for i, p := range pos {
		s[i] = fmt.Sprint(p)
	}
	return "positions " + strings.Join(s, ", ")
}

func atPositions(pos []int) string {
	if len(pos) == 0 {
		return ""
	}
	return " (" + describePositions(pos) + ")"
}

func andMore(n int, what string) string {
	if n <= 0 {
		return ""
	}
	if n == 1 {
		return fmt.Sprintf(" (and 1 more %s)", what)
	}
	return fmt.Sprintf(" (and %d more %ss)", n, what)
}

func sortedUnion(lists ...[]int) []int {
	seen := map[int]bool{}
	var out []int
	for _, l := range lists {
		for _, p := range l {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	sort.Ints(out)
	return out
}
