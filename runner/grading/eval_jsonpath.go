package grading

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/theory/jsonpath"
	"github.com/theory/jsonpath/spec"

	"tolokaforge.io/operator/api/canonical"
	"tolokaforge.io/operator/api/task"
)

// jsonPathEvaluator scores state_checks.jsonpaths: RFC 9535 queries over {db: <stable
// tables>} (path:) and file checks under the trial's work dir (path_glob:). Score =
// passed / total. A path that selects nothing fails its check with a message, except
// under exists/absent/count, whose answer that is.
//
// Over several selected nodes, equals, equals_ci, not_equals, matches and gt/gte/lt/lte
// must hold for every node; contains and contains_ci for at least one (the selection
// "contains" the value). count is the number of selected nodes.
type jsonPathEvaluator struct{}

func (jsonPathEvaluator) Name() string      { return evalJSONPath }
func (jsonPathEvaluator) Component() string { return task.ComponentStateChecks }

type checkOutcome struct {
	passed bool
	label  string
	msg    string
}

func (jsonPathEvaluator) Evaluate(ctx context.Context, g *gradeCtx) (verdict, error) {
	sc := g.stateChecks()
	if sc == nil || len(sc.JSONPaths) == 0 {
		return verdict{}, nil
	}
	var root any
	numeric := map[string]bool{}
	for _, f := range sc.NumericStringFields {
		numeric[f] = true
	}
	outcomes := make([]checkOutcome, 0, len(sc.JSONPaths))
	for i := range sc.JSONPaths {
		c := &sc.JSONPaths[i]
		label := c.Description
		if label == "" {
			label = c.Path + c.PathGlob
		}
		var ok bool
		var msg string
		if p := g.plan.paths[i]; p != nil {
			if root == nil {
				st, err := g.trialState(ctx)
				if err != nil {
					return verdict{}, err
				}
				root = st.jsonPathRoot(dictTableKeys(g.task))
			}
			ok, msg = checkPath(c, p, root, g.plan.matches[i], numeric)
		} else {
			ok, msg = checkGlob(c, g.env.WorkDir(), g.plan.matches[i])
		}
		outcomes = append(outcomes, checkOutcome{passed: ok, label: label, msg: msg})
	}
	g.ledger.evaluated(g.keysFor(evalJSONPath)...)
	return scoreOutcomes("JSONPath", "checks", outcomes), nil
}

// scoreOutcomes folds per-check outcomes into a verdict and its segment.
func scoreOutcomes(segment, noun string, outcomes []checkOutcome) verdict {
	passed := 0
	var failed []string
	for _, o := range outcomes {
		if o.passed {
			passed++
			continue
		}
		failed = append(failed, fmt.Sprintf("%s (%s)", o.label, o.msg))
	}
	v := verdict{scored: true, score: float64(passed) / float64(len(outcomes))}
	if len(failed) == 0 {
		v.segment = fmt.Sprintf("%s: all %d %s passed", segment, len(outcomes), noun)
	} else {
		v.segment = fmt.Sprintf("%s: %d of %d %s passed; failed: %s", segment, passed, len(outcomes), noun, strings.Join(failed, "; "))
	}
	return v
}

// operator returns the check's single operator and its operand.
func operator(c *task.JSONPathCheck) (string, canonical.Value, error) {
	raw := func(name string, b []byte) (string, canonical.Value, error) {
		v, err := canonical.Parse(b)
		if err != nil {
			return name, nil, fmt.Errorf("the %s operand does not parse: %w", name, err)
		}
		return name, v, nil
	}
	switch {
	case c.Equals != nil:
		return raw("equals", c.Equals)
	case c.EqualsCI != nil:
		return "equals_ci", canonical.String(*c.EqualsCI), nil
	case c.NotEquals != nil:
		return raw("not_equals", c.NotEquals)
	case c.Contains != nil:
		return raw("contains", c.Contains)
	case c.ContainsCI != nil:
		return "contains_ci", canonical.String(*c.ContainsCI), nil
	case c.Matches != nil:
		return "matches", canonical.String(*c.Matches), nil
	case c.Exists != nil:
		return "exists", canonical.Bool(*c.Exists), nil
	case c.Absent != nil:
		return "absent", canonical.Bool(*c.Absent), nil
	case c.GT != nil:
		return raw("gt", c.GT)
	case c.GTE != nil:
		return raw("gte", c.GTE)
	case c.LT != nil:
		return raw("lt", c.LT)
	case c.LTE != nil:
		return raw("lte", c.LTE)
	case c.Count != nil:
		return "count", canonical.NewInt(int64(*c.Count)), nil
	}
	return "", nil, fmt.Errorf("no operator (one of equals, equals_ci, not_equals, contains, contains_ci, matches, exists, absent, gt, gte, lt, lte, count)")
}

// presence decides exists / absent / count from the number of things selected; ok is
// false for the value operators.
func presence(op string, operand canonical.Value, n int, what string) (decided, passed bool, msg string) {
	switch op {
	case "exists", "absent":
		want := bool(operand.(canonical.Bool))
		if op == "absent" {
			want = !want
		}
		if (n > 0) == want {
			return true, true, ""
		}
		if want {
			return true, false, "selected nothing, expected a " + what
		}
		return true, false, fmt.Sprintf("selected %d %ss, expected none", n, what)
	case "count":
		want, _ := operand.(canonical.Int).Int64()
		if int64(n) == want {
			return true, true, ""
		}
		return true, false, fmt.Sprintf("selected %d %ss, expected %d", n, what, want)
	}
	return false, false, ""
}

// holds applies a value operator to one node.
func holds(op string, node, operand canonical.Value, re *regexp.Regexp) (bool, string) {
	switch op {
	case "equals":
		return canonical.Equal(node, operand), ""
	case "not_equals":
		return !canonical.Equal(node, operand), ""
	case "equals_ci":
		s, ok := node.(canonical.String)
		if !ok {
			return false, "not a string"
		}
		return strings.EqualFold(string(s), string(operand.(canonical.String))), ""
	case "contains":
		return contains(node, operand, false), ""
	case "contains_ci":
		return contains(node, operand, true), ""
	case "matches":
		s, ok := node.(canonical.String)
		if !ok {
			return false, "not a string"
		}
		return re.MatchString(string(s)), ""
	case "gt", "gte", "lt", "lte":
		c, ok := order(node, operand)
		if !ok {
			return false, "not comparable"
		}
		switch op {
		case "gt":
			return c > 0, ""
		case "gte":
			return c >= 0, ""
		case "lt":
			return c < 0, ""
		default:
			return c <= 0, ""
		}
	}
	return false, "unknown operator"
}

func checkPath(c *task.JSONPathCheck, p *jsonpath.Path, root any, re *regexp.Regexp, numeric map[string]bool) (bool, string) {
	op, operand, err := operator(c)
	if err != nil {
		return false, err.Error()
	}
	nodes := p.SelectLocated(root)
	if decided, ok, msg := presence(op, operand, len(nodes), "node"); decided {
		if ok {
			return true, ""
		}
		return false, c.Path + " " + msg
	}
	if len(nodes) == 0 {
		hint := ""
		if rootName(p) != "db" {
			hint = "; the JSONPath root holds only db"
		}
		return false, fmt.Sprintf("%s selected nothing%s", c.Path, hint)
	}
	anyMode := op == "contains" || op == "contains_ci"
	var firstFail string
	for _, n := range nodes {
		v, err := canonical.FromAny(n.Node)
		if err != nil {
			return false, fmt.Sprintf("%s: %v", n.Path, err)
		}
		opnd := operand
		if numeric[lastName(n.Path)] && !anyMode {
			// numeric_string_fields: "158.99" and 158.99 compare as the same number.
			v, opnd = asNumber(v), asNumber(operand)
		}
		ok, why := holds(op, v, opnd, re)
		if ok && anyMode {
			return true, ""
		}
		if !ok && !anyMode {
			return false, failure(n.Path.String(), v, op, operand, why)
		}
		if !ok && firstFail == "" {
			firstFail = failure(n.Path.String(), v, op, operand, why)
		}
	}
	if anyMode {
		if len(nodes) == 1 {
			return false, firstFail
		}
		return false, fmt.Sprintf("none of the %d selected nodes %s %s", len(nodes), op, show(operand))
	}
	return true, ""
}

func failure(where string, got canonical.Value, op string, operand canonical.Value, why string) string {
	if why != "" {
		why = " (" + why + ")"
	}
	return fmt.Sprintf("%s is %s, expected %s %s%s", where, show(got), op, show(operand), why)
}

// lastName is the member name a normalized path ends in ("" for an index).
func lastName(p spec.NormalizedPath) string {
	if len(p) == 0 {
		return ""
	}
	if n, ok := p[len(p)-1].(spec.Name); ok {
		return string(n)
	}
	return ""
}
