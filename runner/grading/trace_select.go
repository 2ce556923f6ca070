package grading

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"tolokaforge.io/operator/api/canonical"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/grading/timeline"
)

// traceView is the timeline as trace checks read it: each event's args and result
// parsed once, and every regular expression compiled once per grade, so a constraint
// evaluated under many bindings never re-parses the transcript.
type traceView struct {
	events  []timeline.Event
	args    []canonical.Object // by position; empty object when the args do not parse
	results []canonical.Value  // by position; nil when the output is not JSON
	parsed  []bool

	agentTools, userTools []string
	regexps               map[string]*regexp.Regexp
}

func newTraceView(tl *timeline.Timeline, agentTools, userTools []string) *traceView {
	n := len(tl.Events)
	return &traceView{
		events: tl.Events, args: make([]canonical.Object, n), results: make([]canonical.Value, n),
		parsed: make([]bool, n), agentTools: agentTools, userTools: userTools,
		regexps: map[string]*regexp.Regexp{},
	}
}

func (v *traceView) parse(i int) {
	if v.parsed[i] {
		return
	}
	v.parsed[i] = true
	e := &v.events[i]
	if e.Kind != task.EventToolCall {
		return
	}
	if a, err := parseArgs(e.Args); err == nil {
		v.args[i] = a
	} else {
		v.args[i] = canonical.NewObject()
	}
	if out := bytes.TrimSpace([]byte(e.Output)); len(out) > 0 && (out[0] == '{' || out[0] == '[' || out[0] == '"' ||
		out[0] == '-' || (out[0] >= '0' && out[0] <= '9') || bytes.Equal(out, []byte("true")) ||
		bytes.Equal(out, []byte("false")) || bytes.Equal(out, []byte("null"))) {
		if r, err := canonical.Parse(out); err == nil {
			v.results[i] = r
		}
	}
}

// field reads "args.<key>" or "result.<path>" of the event at i: the value a binding
// binds. ok is false when the event carries no such value.
func (v *traceView) field(i int, ref string) (canonical.Value, bool) {
	v.parse(i)
	src, rest, _ := strings.Cut(ref, ".")
	switch src {
	case "args":
		if v.events[i].Kind != task.EventToolCall {
			return nil, false
		}
		return lookupPath(v.args[i], rest)
	case "result":
		if v.results[i] == nil {
			return nil, false
		}
		return lookupPath(v.results[i], rest)
	}
	return nil, false
}

// lookupPath walks a dotted path ("order.items.0.id", "items[0].id") through objects
// and arrays. The result of a tool is free-form, so an index is allowed wherever an
// array sits.
func lookupPath(root canonical.Value, path string) (canonical.Value, bool) {
	path = strings.NewReplacer("[", ".", "]", "").Replace(path)
	cur := root
	for seg := range strings.SplitSeq(path, ".") {
		if seg == "" {
			continue
		}
		switch c := cur.(type) {
		case canonical.Object:
			next, ok := c.Get(seg)
			if !ok {
				return nil, false
			}
			cur = next
		case canonical.Array:
			n, err := strconv.Atoi(seg)
			if err != nil || n < 0 || n >= len(c) {
				return nil, false
			}
			cur = c[n]
		default:
			return nil, false
		}
	}
	return cur, true
}

// bindings are the variables in force while a require tree is evaluated.
type bindings map[string]canonical.Value

// unboundVarError is a ${var} no enclosing bind defines: a pack defect.
type unboundVarError struct{ name string }

func (e *unboundVarError) Error() string {
	return fmt.Sprintf("${%s} names no variable an enclosing bind defines", e.name)
}

// text renders a bound value inside a larger string: a string as itself, anything else
// as its canonical JSON.
func text(v canonical.Value) string {
	if s, ok := v.(canonical.String); ok {
		return string(s)
	}
	return string(canonical.Marshal(v))
}

// substitute replaces every ${var} in s; quote escapes each substituted value (for a
// regular expression, where a bound value is matched literally).
func substitute(s string, env bindings, quote func(string) string) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var err error
	out := traceVarRef.ReplaceAllStringFunc(s, func(ref string) string {
		name := ref[2 : len(ref)-1]
		v, ok := env[name]
		if !ok {
			if err == nil {
				err = &unboundVarError{name: name}
			}
			return ref
		}
		if quote != nil {
			return quote(text(v))
		}
		return text(v)
	})
	return out, err
}

var traceVarRef = regexp.MustCompile(`\$\{[^}]*\}`)

// expected resolves a selector's expected JSON value, substituting ${var} in every
// string at any depth (inside arrays and objects too, as validation checks them): a
// string that is exactly "${var}" becomes the bound value with its own type, so
// {order_id: "${oid}"} matches a numeric id too; a string embedding references is
// interpolated. Object keys are matched literally.
func expected(raw []byte, env bindings) (canonical.Value, error) {
	want, err := canonical.Parse(bytes.TrimSpace(raw))
	if err != nil {
		return nil, fmt.Errorf("expected value %s does not parse: %w", raw, err)
	}
	out, _, err := substituteValue(want, env)
	return out, err
}

// substituteValue returns v with its strings substituted, and whether anything
// changed; a subtree holding no reference is returned as it is, not copied.
func substituteValue(v canonical.Value, env bindings) (canonical.Value, bool, error) {
	switch x := v.(type) {
	case canonical.String:
		s := string(x)
		if !strings.Contains(s, "${") {
			return v, false, nil
		}
		if m := traceVarRef.FindString(s); m == s {
			if bound, ok := env[m[2:len(m)-1]]; ok {
				return bound, true, nil
			}
			return nil, false, &unboundVarError{name: m[2 : len(m)-1]}
		}
		out, err := substitute(s, env, nil)
		return canonical.String(out), true, err
	case canonical.Array:
		var out canonical.Array
		for i, e := range x {
			ne, changed, err := substituteValue(e, env)
			if err != nil {
				return nil, false, err
			}
			if changed && out == nil {
				out = append(make(canonical.Array, 0, len(x)), x[:i]...)
			}
			if out != nil {
				out = append(out, ne)
			}
		}
		if out == nil {
			return x, false, nil
		}
		return out, true, nil
	case canonical.Object:
		var members []canonical.Member
		some := false
		for k, e := range x.All() {
			ne, changed, err := substituteValue(e, env)
			if err != nil {
				return nil, false, err
			}
			some = some || changed
			members = append(members, canonical.Member{Key: k, Value: ne})
		}
		if !some {
			return x, false, nil
		}
		return canonical.NewObject(members...), true, nil
	}
	return v, false, nil
}

// matches reports whether the event at i matches sel under env. Every key the selector
// gives must match. A tool name is authored unprefixed like a golden action, so it
// matches the registered name it resolves to as well as itself.
func (v *traceView) matches(sel *task.Selector, i int, env bindings) (bool, error) {
	e := &v.events[i]
	if sel.Event != "" && e.Kind != sel.Event {
		return false, nil
	}
	for _, f := range []struct{ want, got string }{
		{sel.Role, e.Role}, {sel.Executor, e.Executor}, {sel.Status, string(e.Status)},
	} {
		if f.want == "" {
			continue
		}
		want, err := substitute(f.want, env, nil)
		if err != nil {
			return false, err
		}
		if f.got != want {
			return false, nil
		}
	}
	if sel.Tool != "" {
		want, err := substitute(sel.Tool, env, nil)
		if err != nil {
			return false, err
		}
		if e.Kind != task.EventToolCall || !v.toolIs(e, want) {
			return false, nil
		}
	}
	if sel.ContentMatches != "" {
		pattern, err := substitute(sel.ContentMatches, env, regexp.QuoteMeta)
		if err != nil {
			return false, err
		}
		re, err := v.regexp(pattern)
		if err != nil {
			return false, err
		}
		content := e.Content
		if e.Kind == task.EventToolCall {
			content = e.Output
		}
		if !re.MatchString(content) {
			return false, nil
		}
	}
	if len(sel.Args) > 0 {
		if e.Kind != task.EventToolCall {
			return false, nil
		}
		v.parse(i)
		for _, k := range sortedSelectorKeys(sel.Args) {
			want, err := expected(sel.Args[k], env)
			if err != nil {
				return false, err
			}
			got, ok := v.args[i].Get(k)
			if !ok || !canonical.Equal(got, want) {
				return false, nil
			}
		}
	}
	if len(sel.Result) > 0 {
		v.parse(i)
		if v.results[i] == nil {
			return false, nil
		}
		for _, k := range sortedSelectorKeys(sel.Result) {
			want, err := expected(sel.Result[k], env)
			if err != nil {
				return false, err
			}
			got, ok := lookupPath(v.results[i], k)
			if !ok || !canonical.Equal(got, want) {
				return false, nil
			}
		}
	}
	return true, nil
}

func (v *traceView) toolIs(e *timeline.Event, want string) bool {
	if e.Tool == want {
		return true
	}
	registered := v.agentTools
	if e.Executor == task.ExecutorUser {
		registered = v.userTools
	}
	r, _ := resolveTool(want, registered)
	return r != "" && r == e.Tool
}

func (v *traceView) regexp(pattern string) (*regexp.Regexp, error) {
	if re, ok := v.regexps[pattern]; ok {
		return re, nil
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("content_matches %q is not an RE2 expression: %w", pattern, err)
	}
	v.regexps[pattern] = re
	return re, nil
}

// positions returns the positions of every event matching sel, in order.
func (v *traceView) positions(sel *task.Selector, env bindings) ([]int, error) {
	var out []int
	for i := range v.events {
		ok, err := v.matches(sel, i, env)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, i)
		}
	}
	return out, nil
}

func sortedSelectorKeys[V any](m map[string]V) []string {
	if len(m) == 1 {
		for k := range m {
			return []string{k}
		}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
