package task

import (
	"encoding/json"
	"regexp"
	"strings"
)

// traceFields is, per kind, the kind-specific fields it needs and those it may
// carry (grading-config.md, "Trace checks"). A field of another kind is refused:
// the evaluator would never read it, so the author's intent would be dropped.
var traceFields = map[TraceKind]struct{ required, optional []string }{
	TraceOccurs:             {required: []string{"match"}, optional: []string{"min", "max"}},
	TraceAbsent:             {required: []string{"match"}},
	TracePrecedes:           {required: []string{"first", "then"}},
	TraceResponds:           {required: []string{"trigger", "response"}, optional: []string{"within"}},
	TraceImmediatelyFollows: {required: []string{"trigger", "next"}},
	TraceOrder:              {required: []string{"sequence"}},
	TraceFirst:              {required: []string{"scope", "match"}},
	TraceLast:               {required: []string{"scope", "match"}},
	TraceBetween:            {required: []string{"after", "before", "match"}, optional: []string{"min", "max"}},
	TraceUnique:             {required: []string{"match", "by"}},
}

// kindFieldOrder is the declaration order of the kind-specific fields, so the
// first offending field reported is deterministic.
var kindFieldOrder = []string{"match", "min", "max", "first", "then", "trigger", "response", "within", "next", "sequence", "scope", "after", "before", "by"}

func (tc *TraceConstraint) present() map[string]bool {
	return map[string]bool{
		"match": tc.Match != nil, "min": tc.Min != nil, "max": tc.Max != nil,
		"first": tc.First != nil, "then": tc.Then != nil, "trigger": tc.Trigger != nil,
		"response": tc.Response != nil, "within": tc.Within != nil, "next": tc.Next != nil,
		"sequence": len(tc.Sequence) > 0, "scope": tc.Scope != nil, "after": tc.After != nil,
		"before": tc.Before != nil, "by": len(tc.By) > 0,
	}
}

func (t *TraceChecks) validate(c *checker, p string) {
	validateConstraintList(c, joinKey(p, "constraints"), t.Constraints)
	seen := map[string]int{}
	for i, alt := range t.Alternatives {
		ap := joinIndex(joinKey(p, "alternatives"), i)
		c.required(joinKey(ap, "id"), alt.ID)
		if j, dup := seen[alt.ID]; dup && alt.ID != "" {
			c.failf(joinKey(ap, "id"), "duplicate alternative id %q (also at index %d)", alt.ID, j)
		}
		seen[alt.ID] = i
		if len(alt.Constraints) == 0 {
			c.failf(joinKey(ap, "constraints"), "an alternative needs at least one constraint")
		}
		validateConstraintList(c, joinKey(ap, "constraints"), alt.Constraints)
	}
}

func validateConstraintList(c *checker, p string, list []TraceConstraint) {
	seen := map[string]int{}
	for i := range list {
		ip := joinIndex(p, i)
		con := &list[i]
		c.required(joinKey(ip, "id"), con.ID)
		if j, dup := seen[con.ID]; dup && con.ID != "" {
			c.failf(joinKey(ip, "id"), "duplicate constraint id %q (also at index %d)", con.ID, j)
		}
		seen[con.ID] = i
		con.validate(c, ip, traceScope{id: con.ID})
	}
}

// traceScope is what a selector sees: the top-level constraint it belongs to (named in
// refusals, since a path through require trees is hard to read back) and the variables
// enclosing binds define, which it may reference as ${var}.
type traceScope struct {
	id   string
	vars []string
}

// validate checks one constraint under the scope of its enclosing binds.
func (tc *TraceConstraint) validate(c *checker, p string, bound traceScope) {
	c.required(joinKey(p, "kind"), string(tc.Kind))
	c.enum(joinKey(p, "kind"), string(tc.Kind), tc.Kind.members())
	c.enum(joinKey(p, "severity"), string(tc.Severity), tc.Severity.members())
	c.enum(joinKey(p, "on_unbound"), string(tc.OnUnbound), tc.OnUnbound.members())
	if tc.Weight != nil {
		c.nonNegative(joinKey(p, "weight"), *tc.Weight)
	}
	if spec, known := traceFields[tc.Kind]; known {
		present := tc.present()
		allowed := map[string]bool{}
		for _, f := range spec.required {
			allowed[f] = true
			// A binding constraint is decided by its require tree; its own kind
			// names it for the ledger, so its kind fields may be absent.
			if !present[f] && tc.Bind == nil {
				c.failf(joinKey(p, f), "required by kind %s", tc.Kind)
			}
		}
		for _, f := range spec.optional {
			allowed[f] = true
		}
		for _, f := range kindFieldOrder {
			if present[f] && !allowed[f] {
				c.failf(joinKey(p, f), "not used by kind %s", tc.Kind)
			}
		}
	}
	c.nonNegativeInt(joinKey(p, "min"), tc.Min)
	c.nonNegativeInt(joinKey(p, "max"), tc.Max)
	if tc.Min != nil && tc.Max != nil && *tc.Max < *tc.Min {
		c.failf(joinKey(p, "max"), "%d is below min %d", *tc.Max, *tc.Min)
	}
	if tc.Within != nil && *tc.Within < 1 {
		c.failf(joinKey(p, "within"), "%d must be >= 1", *tc.Within)
	}
	for i, key := range tc.By {
		c.required(joinIndex(joinKey(p, "by"), i), key)
	}
	for _, s := range []struct {
		name string
		sel  *Selector
	}{
		{"match", tc.Match}, {"first", tc.First}, {"then", tc.Then}, {"trigger", tc.Trigger},
		{"response", tc.Response}, {"next", tc.Next}, {"scope", tc.Scope},
		{"after", tc.After}, {"before", tc.Before},
	} {
		if s.sel != nil {
			s.sel.validate(c, joinKey(p, s.name), bound)
		}
	}
	for i := range tc.Sequence {
		tc.Sequence[i].validate(c, joinIndex(joinKey(p, "sequence"), i), bound)
	}
	switch {
	case tc.Bind != nil && tc.Require == nil:
		c.failf(joinKey(p, "require"), "required with bind")
	case tc.Bind == nil && tc.Require != nil:
		c.failf(joinKey(p, "bind"), "required with require")
	}
	if b := tc.Bind; b != nil {
		bp := joinKey(p, "bind")
		if !traceVarName.MatchString(b.Var) {
			c.failf(joinKey(bp, "var"), "%q is not a variable name ([A-Za-z_][A-Za-z0-9_]*)", b.Var)
		}
		b.From.validate(c, joinKey(bp, "from"), bound)
		field, rest, _ := strings.Cut(b.Value, ".")
		if (field != "result" && field != "args") || rest == "" {
			c.failf(joinKey(bp, "value"), "%q must be result.<path> or args.<key>", b.Value)
		}
	}
	if r := tc.Require; r != nil {
		rp := joinKey(p, "require")
		if r.ID != "" {
			c.failf(joinKey(rp, "id"), "not allowed inside require (the enclosing constraint's id names the verdict)")
		}
		inner := bound
		if tc.Bind != nil {
			inner.vars = append(append([]string(nil), bound.vars...), tc.Bind.Var)
		}
		r.validate(c, rp, inner)
	}
}

var (
	traceVarName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	traceVarRef  = regexp.MustCompile(`\$\{[^}]*\}`)
)

func (s *Selector) validate(c *checker, p string, bound traceScope) {
	s.checkRefs(c, p, bound)
	c.enum(joinKey(p, "event"), string(s.Event), s.Event.members())
	// role, executor and status may name a bound variable instead of a value.
	closedUnlessVar := func(key, value string, members []string) {
		if !strings.Contains(value, "${") {
			c.enum(joinKey(p, key), value, members)
		}
	}
	closedUnlessVar("role", s.Role, []string{RoleUser, RoleAssistant})
	closedUnlessVar("executor", s.Executor, []string{ExecutorAgent, ExecutorUser})
	closedUnlessVar("status", s.Status, ToolCallStatus("").members())
	if s.ContentMatches != "" {
		// A bound value is substituted before matching; compile with a literal in
		// its place so the author's pattern itself is what gets checked.
		c.regex(joinKey(p, "content_matches"), traceVarRef.ReplaceAllString(s.ContentMatches, "x"))
	}
}

// checkRefs refuses a ${var} no enclosing bind defines, at any depth of an args or
// result value: the evaluator could only fail the grade on it, after the agent's budget
// is spent. Values are walked parsed, so an escaped "\u0024{x}" is seen as the grader
// will see it. Object keys are matched literally, so a ${ in a key is refused too rather
// than compared as text the author did not mean.
func (s *Selector) checkRefs(c *checker, p string, bound traceScope) {
	check := func(key, value string) {
		for _, ref := range traceVarRef.FindAllString(value, -1) {
			name := ref[2 : len(ref)-1]
			if !isMember(name, bound.vars) {
				scope := "no enclosing bind defines a variable"
				if len(bound.vars) > 0 {
					scope = "the enclosing binds define " + strings.Join(bound.vars, ", ")
				}
				c.failf(key, "%s in constraint %q names no bound variable (%s)", ref, bound.id, scope)
			}
		}
	}
	check(joinKey(p, "role"), s.Role)
	check(joinKey(p, "executor"), s.Executor)
	check(joinKey(p, "tool"), s.Tool)
	check(joinKey(p, "status"), s.Status)
	check(joinKey(p, "content_matches"), s.ContentMatches)
	for _, field := range []struct {
		name   string
		values map[string]json.RawMessage
	}{{"args", s.Args}, {"result", s.Result}} {
		for _, k := range sortedKeys(field.values) {
			kp := joinKey(joinKey(p, field.name), k)
			c.jsonNumbers(kp, field.values[k])
			walkJSON(field.values[k], kp, func(vp string, v any) {
				switch x := v.(type) {
				case string:
					check(vp, x)
				case map[string]any:
					for _, key := range sortedKeys(x) {
						if strings.Contains(key, "${") {
							c.failf(joinKey(vp, key), "object keys are matched literally; ${var} is substituted in values only (constraint %q)", bound.id)
						}
					}
				}
			})
		}
	}
}
