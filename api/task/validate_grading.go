package task

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strings"
)

// Validate checks a GradingConfig after ApplyDefaults; paths are rooted at the
// grading block ("state_checks.jsonpaths[0]").
func (g *GradingConfig) Validate() error {
	c := &checker{}
	g.validate(c, "")
	return c.result()
}

func (g *GradingConfig) validate(c *checker, p string) {
	c.enum(joinKey(p, "combine_method"), string(g.CombineMethod), g.CombineMethod.members())
	for _, k := range sortedKeys(g.Weights) {
		kp := joinKey(joinKey(p, "weights"), k)
		if !isMember(k, ComponentNames()) {
			c.failf(kp, "%s", notMember(k, ComponentNames()))
		}
		c.nonNegative(kp, g.Weights[k])
	}
	c.unit(joinKey(p, "pass_threshold"), g.PassThreshold)
	c.enum(joinKey(p, "grading_method"), string(g.GradingMethod), g.GradingMethod.members())
	switch {
	case g.GradingMethod == GradingTestExecution && g.TestExecution == nil:
		c.failf(joinKey(p, "test_execution"), "required when grading_method is test_execution")
	case g.GradingMethod != GradingTestExecution && g.TestExecution != nil:
		c.failf(joinKey(p, "test_execution"), "only allowed with grading_method test_execution")
	}
	if sc := g.StateChecks; sc != nil {
		sc.validate(c, joinKey(p, "state_checks"))
	}
	if tr := g.TranscriptRules; tr != nil {
		tr.validate(c, joinKey(p, "transcript_rules"))
	}
	if tc := g.TraceChecks; tc != nil {
		tc.validate(c, joinKey(p, "trace_checks"))
	}
	if j := g.LLMJudge; j != nil {
		j.validate(c, joinKey(p, "llm_judge"))
	}
	if cc := g.CustomChecks; cc != nil {
		cc.validate(c, joinKey(p, "custom_checks"))
	}
	if te := g.TestExecution; te != nil {
		tp := joinKey(p, "test_execution")
		if len(te.Command) == 0 {
			c.failf(joinKey(tp, "command"), "required")
		}
		c.seconds(joinKey(tp, "timeout_s"), te.TimeoutS)
	}
	// Last, so a defect inside a component is named before the fold's view of it.
	if g.GradingMethod != GradingTestExecution {
		g.validateFold(c, p)
	}
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

func (sc *StateChecks) validate(c *checker, p string) {
	for i, a := range sc.GoldenActions {
		ap := joinIndex(joinKey(p, "golden_actions"), i)
		c.required(joinKey(ap, "tool_name"), a.ToolName)
		c.jsonObject(joinKey(ap, "arguments"), a.Arguments)
		c.jsonNumbers(joinKey(ap, "arguments"), a.Arguments)
	}
	if sc.ExpectedHash != nil && !sha256Hex.MatchString(*sc.ExpectedHash) {
		c.failf(joinKey(p, "expected_hash"), "%q is not a lowercase hex sha256 digest", *sc.ExpectedHash)
	}
	c.unit(joinKey(p, "hash_weight"), sc.HashWeight)
	for i := range sc.JSONPaths {
		sc.JSONPaths[i].validate(c, joinIndex(joinKey(p, "jsonpaths"), i))
	}
	seen := map[string]int{}
	for i := range sc.DBProbes {
		pp := joinIndex(joinKey(p, "db_probes"), i)
		probe := &sc.DBProbes[i]
		c.required(joinKey(pp, "id"), probe.ID)
		if j, dup := seen[probe.ID]; dup && probe.ID != "" {
			c.failf(joinKey(pp, "id"), "duplicate probe id %q (also at index %d)", probe.ID, j)
		}
		seen[probe.ID] = i
		c.required(joinKey(pp, "query"), probe.Query)
		if probe.Query != "" && !strings.HasPrefix(probe.Query, "$") {
			c.failf(joinKey(pp, "query"), "%q is not a JSONPath query (must start with $)", probe.Query)
		}
		probe.Expect.validate(c, joinKey(pp, "expect"))
	}
	// A hash's source is golden_actions (present, even empty: an empty golden path
	// makes the initial state the golden state, a refusal task) or expected_hash.
	// Only authoring refuses a hash with no source, and only an ABSENT
	// golden_actions is no source: the runner grades every hash_enabled shape, one
	// with no declared source against the trial's initial state (runner-protocol.md,
	// the GradeTrial error table), and refuses at grade time the two mixes that
	// leaves (beside db_probes; beside jsonpaths with no hash_weight).
	declared := sc.GoldenActions != nil || sc.ExpectedHash != nil
	named := len(sc.GoldenActions) > 0 || sc.ExpectedHash != nil
	if c.runner {
		declared = named
	}
	// db_probes is the sole state source when present (grading-config.md); the
	// one mix left to grade time is hash_enabled with no declared source.
	if len(sc.DBProbes) > 0 {
		switch {
		case len(sc.JSONPaths) > 0:
			c.failf(joinKey(p, "db_probes"), "db_probes is the sole state source when present; it cannot be declared beside non-empty jsonpaths")
		case sc.HashEnabled && named:
			c.failf(joinKey(p, "db_probes"), "db_probes is the sole state source when present; it cannot be declared beside an enabled hash naming a source (golden_actions or expected_hash)")
		case sc.HashEnabled && declared:
			c.failf(joinKey(p, "db_probes"), "db_probes is the sole state source when present; it cannot be declared beside an enabled hash "+
				"(golden_actions: [] grades the hash against the initial state, a second verdict for state_checks with no share between them); "+
				"drop the probes or set hash_enabled: false")
		}
	}
	// The two hash shapes the runner could only refuse at grade time, after the agent
	// spent its budget (runner-protocol.md, the GradeTrial error table): a hash with no
	// source, and a hash verdict beside a JSONPath score with no share between them.
	switch {
	case c.runner:
		if sc.HashEnabled && named && len(sc.JSONPaths) > 0 && sc.HashWeight == nil {
			c.failf(joinKey(p, "hash_weight"), hashWeightRequired)
		}
	case sc.HashEnabled && !declared:
		c.failf(joinKey(p, "hash_enabled"), "true, but neither golden_actions nor expected_hash is declared, so the hash has no source "+
			"to compare the trial's state against; declare golden_actions (the reference solution, replayed at grade time) or "+
			"expected_hash (the digest of the golden stable state), or set hash_enabled: false")
	case sc.HashEnabled && len(sc.JSONPaths) > 0 && sc.HashWeight == nil:
		c.failf(joinKey(p, "hash_weight"), hashWeightRequired)
	}
}

const hashWeightRequired = "required when hash_enabled is true and jsonpaths is not empty: the hash verdict and the " +
	"JSONPath score are both real and nothing says how to fold them, so every trial would fail grading after the agent's " +
	"budget is spent; declare state_checks.hash_weight in [0, 1] (the hash verdict's share)"

func (j *JSONPathCheck) operators() []string {
	var ops []string
	add := func(name string, set bool) {
		if set {
			ops = append(ops, name)
		}
	}
	add("equals", j.Equals != nil)
	add("equals_ci", j.EqualsCI != nil)
	add("not_equals", j.NotEquals != nil)
	add("contains", j.Contains != nil)
	add("contains_ci", j.ContainsCI != nil)
	add("matches", j.Matches != nil)
	add("exists", j.Exists != nil)
	add("absent", j.Absent != nil)
	add("gt", j.GT != nil)
	add("gte", j.GTE != nil)
	add("lt", j.LT != nil)
	add("lte", j.LTE != nil)
	add("count", j.Count != nil)
	return ops
}

const jsonPathOperators = "equals, equals_ci, not_equals, contains, contains_ci, matches, exists, absent, gt, gte, lt, lte, count"

func (j *JSONPathCheck) validate(c *checker, p string) {
	switch {
	case j.Path == "" && j.PathGlob == "":
		c.failf(p, "needs exactly one of path, path_glob; got neither")
	case j.Path != "" && j.PathGlob != "":
		c.failf(p, "needs exactly one of path, path_glob; got both")
	case j.Path != "" && !strings.HasPrefix(j.Path, "$"):
		c.failf(joinKey(p, "path"), "%q is not a JSONPath query (must start with $)", j.Path)
	case j.PathGlob != "":
		if _, err := path.Match(j.PathGlob, ""); err != nil {
			c.failf(joinKey(p, "path_glob"), "invalid glob %q: %v", j.PathGlob, err)
		}
	}
	switch ops := j.operators(); len(ops) {
	case 0:
		c.failf(p, "needs exactly one operator (%s); got none", jsonPathOperators)
	case 1:
	default:
		c.failf(p, "needs exactly one operator; got %s", strings.Join(ops, ", "))
	}
	if j.Matches != nil {
		c.regex(joinKey(p, "matches"), *j.Matches)
	}
	for _, op := range []struct {
		name string
		raw  json.RawMessage
	}{{"equals", j.Equals}, {"not_equals", j.NotEquals}, {"contains", j.Contains}, {"gt", j.GT}, {"gte", j.GTE}, {"lt", j.LT}, {"lte", j.LTE}} {
		c.jsonNumbers(joinKey(p, op.name), op.raw)
	}
	c.nonNegativeInt(joinKey(p, "count"), j.Count)
	for _, op := range []struct {
		name string
		raw  []byte
	}{{"gt", j.GT}, {"gte", j.GTE}, {"lt", j.LT}, {"lte", j.LTE}} {
		if op.raw != nil {
			if k := rawKind(op.raw); k != "number" && k != "string" {
				c.failf(joinKey(p, op.name), "expected a number or string to compare against, got %s", k)
			}
		}
	}
}

func (e *ProbeExpect) validate(c *checker, p string) {
	n := 0
	for _, set := range []bool{e.Count != nil, e.Equals != nil, e.Exists != nil, e.Absent != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		c.failf(p, "needs exactly one expectation (count, equals, exists, absent); got %d", n)
	}
	c.nonNegativeInt(joinKey(p, "count"), e.Count)
	if e.Equals != nil {
		if k := rawKind(e.Equals); k != "array" {
			c.failf(joinKey(p, "equals"), "expected an array of the expected results, got %s", k)
		}
		c.jsonNumbers(joinKey(p, "equals"), e.Equals)
	}
}

func (tr *TranscriptRules) validate(c *checker, p string) {
	for i, s := range tr.MustContain {
		if s == "" {
			c.failf(joinIndex(joinKey(p, "must_contain"), i), "empty string would match every message")
		}
	}
	for i, re := range tr.DisallowRegex {
		c.regex(joinIndex(joinKey(p, "disallow_regex"), i), re)
	}
	c.nonNegativeInt(joinKey(p, "max_turns"), tr.MaxTurns)
	c.nonNegativeInt(joinKey(p, "min_assistant_turns"), tr.MinAssistantTurns)
	seen := map[string]int{}
	for i, a := range tr.RequiredActions {
		ap := joinIndex(joinKey(p, "required_actions"), i)
		c.required(joinKey(ap, "action_id"), a.ActionID)
		if j, dup := seen[a.ActionID]; dup && a.ActionID != "" {
			c.failf(joinKey(ap, "action_id"), "duplicate action_id %q (also at index %d)", a.ActionID, j)
		}
		seen[a.ActionID] = i
		c.enum(joinKey(ap, "requestor"), string(a.Requestor), a.Requestor.members())
		c.required(joinKey(ap, "tool_name"), a.ToolName)
		c.jsonObject(joinKey(ap, "arguments"), a.Arguments)
		c.jsonNumbers(joinKey(ap, "arguments"), a.Arguments)
		if a.CompareArgs != nil {
			for k, name := range *a.CompareArgs {
				c.required(joinIndex(joinKey(ap, "compare_args"), k), name)
			}
		}
	}
	for i, ci := range tr.CommunicateInfo {
		c.required(joinKey(joinIndex(joinKey(p, "communicate_info"), i), "info"), ci.Info)
	}
}

func (j *LLMJudge) validate(c *checker, p string) {
	c.required(joinKey(p, "model_ref"), j.ModelRef)
	cp := joinKey(joinKey(p, "rubric"), "criteria")
	if len(j.Rubric.Criteria) == 0 {
		c.failf(cp, "at least one criterion is required")
	}
	seen := map[string]int{}
	for i, cr := range j.Rubric.Criteria {
		ip := joinIndex(cp, i)
		c.required(joinKey(ip, "id"), cr.ID)
		if k, dup := seen[cr.ID]; dup && cr.ID != "" {
			c.failf(joinKey(ip, "id"), "duplicate criterion id %q (also at index %d)", cr.ID, k)
		}
		seen[cr.ID] = i
		c.required(joinKey(ip, "description"), cr.Description)
		c.enum(joinKey(ip, "kind"), string(cr.Kind), cr.Kind.members())
		c.unit(joinKey(ip, "bar"), cr.Bar)
		if cr.Weight != nil {
			c.nonNegative(joinKey(ip, "weight"), *cr.Weight)
		}
	}
	if len(j.Rubric.Criteria) > 0 && allZero(len(j.Rubric.Criteria), func(i int) *float64 { return j.Rubric.Criteria[i].Weight }, DefaultCriterionWeight) {
		c.failf(cp, "every criterion's weight is 0, so the rubric's weighted mean has no share to divide by and the judge would "+
			"error on every trial after the agent's budget is spent; give at least one criterion a positive weight")
	}
	tp := joinKey(p, "tools")
	seenTool := map[string]int{}
	for i, name := range j.Tools {
		c.required(joinIndex(tp, i), name)
		if k, dup := seenTool[name]; dup && name != "" {
			c.failf(joinIndex(tp, i), "duplicate judge tool %q (also at index %d)", name, k)
		}
		seenTool[name] = i
	}
	if m := j.MaxCalls; m != nil {
		switch {
		case *m < 1:
			c.failf(joinKey(p, "max_calls"), "%d must be >= 1", *m)
		case *m > maxJudgeMaxCalls:
			c.failf(joinKey(p, "max_calls"), "%d exceeds %d, the most calls a judge may make in one trial (LLM calls and tool calls together; "+
				"every LLM call is billed and re-sends the whole transcript)", *m, maxJudgeMaxCalls)
		case len(j.Tools) > 0 && *m < MinJudgeMaxCallsWithTools:
			c.failf(joinKey(p, "max_calls"), "%d leaves the judge no call for its tools %v: after the first call a tool call and the answer "+
				"take one each, so judge tools need max_calls >= %d", *m, j.Tools, MinJudgeMaxCallsWithTools)
		}
	}
}

// Bounds of llm_judge.max_calls.
const (
	// maxJudgeMaxCalls is the most calls (LLM and tool calls together) a judge may be
	// given: far above what grading one transcript needs, low enough that a typo (8000
	// for 8) cannot bill a judge loop for hours.
	maxJudgeMaxCalls = 100
	// MinJudgeMaxCallsWithTools is the least max_calls that lets a judge with tools call
	// one: the call that asks, the tool call, and the answer.
	MinJudgeMaxCallsWithTools = 3
)

// builtinWriters are the runner's builtin tools that change the trial: a judge may never
// call them, whatever category the task declares (write_file's files are not even in the
// DB snapshot the runner restores after the judge).
var builtinWriters = []string{"write_file", "db_insert", "db_update", "db_delete"}

// builtinReaders are the runner's builtin tools of category read (runner/tools/builtin's
// catalog): a builtin declared without a category registers with its catalog's, which
// for these is read, while ApplyDefaults has already written compute in its place.
var builtinReaders = []string{"read_file", "list_dir", "db_get", "db_find"}

// validateJudgeTools checks llm_judge.tools against the task's tools: each names one
// agent tool (exactly, or the single agent tool "<prefix>_<name>", as golden actions
// resolve) declared category read that is not a writing builtin. The runner also
// restores the trial's DB after the judge (runner/grading), so a tool mislabelled read
// still cannot change what is graded; this check keeps a pack from asking for a writer,
// or for a tool the judge could not be offered, at all.
func (t *TaskDescription) validateJudgeTools(c *checker, p string, names []string) {
	for i, name := range names {
		if name == "" {
			continue // required() already named it
		}
		ip := joinIndex(p, i)
		matches := matchTools(name, t.AgentTools)
		switch {
		case len(matches) == 0:
			if um := matchTools(name, t.UserTools); len(um) > 0 {
				c.failf(ip, "%q is user tool %s, which is not offered to the agent: the judge may call only the agent's read-only tools", name, um[0].Name)
				continue
			}
			c.failf(ip, "%q names no agent tool of the task (neither %q nor *_%s); the judge may call only the agent's read-only tools", name, name, name)
			continue
		case len(matches) > 1:
			ns := make([]string, len(matches))
			for k, m := range matches {
				ns[k] = m.Name
			}
			c.failf(ip, "%q matches several agent tools (%s); name one exactly", name, strings.Join(ns, ", "))
			continue
		}
		at := matches[0]
		builtin := at.Source == nil || at.Source.Toolset == toolsetBuiltin
		switch {
		case builtin && isMember(at.Name, builtinWriters):
			c.failf(ip, "%q is the builtin %s, which writes: a judge tool must be read-only", name, at.Name)
		case builtin && at.Category == CategoryCompute && isMember(at.Name, builtinReaders):
			// Undeclared (or declared compute, which the runner's registration refuses
			// by name when the judge runs): the builtin registers as read.
		case at.Category != CategoryRead:
			cat := at.Category
			if cat == "" {
				cat = CategoryCompute
			}
			c.failf(ip, "%q is agent tool %s, declared category %s: a judge tool must be declared category read", name, at.Name, cat)
		}
	}
}

// matchTools resolves an authored tool name the way golden actions resolve: the exact
// name, else every tool named "<prefix>_<name>".
func matchTools(name string, tools []ToolSchema) []*ToolSchema {
	var suffixed []*ToolSchema
	for k := range tools {
		ts := &tools[k]
		if ts.Name == name {
			return []*ToolSchema{ts}
		}
		if len(ts.Name) > len(name)+1 && strings.HasSuffix(ts.Name, "_"+name) {
			suffixed = append(suffixed, ts)
		}
	}
	return suffixed
}

func (cc *CustomChecks) validate(c *checker, p string) {
	seen := map[string]int{}
	for i, ch := range cc.Checks {
		ip := joinIndex(joinKey(p, "checks"), i)
		c.required(joinKey(ip, "name"), ch.Name)
		if k, dup := seen[ch.Name]; dup && ch.Name != "" {
			c.failf(joinKey(ip, "name"), "duplicate check name %q (also at index %d)", ch.Name, k)
		}
		seen[ch.Name] = i
		c.required(joinKey(ip, "expr"), ch.Expr)
		// Compiled whether or not the suite is enabled: a disabled suite is a recorded
		// skip, not a licence to ship an expression nothing can run.
		for _, e := range []struct{ key, expr string }{{"expr", ch.Expr}, {"when", ch.When}} {
			if e.expr == "" {
				continue
			}
			if _, err := CompileCustomCheck(e.expr); err != nil {
				c.failf(joinKey(ip, e.key), "check %q: %v", ch.Name, err)
			}
		}
		if ch.Weight != nil {
			c.nonNegative(joinKey(ip, "weight"), *ch.Weight)
		}
	}
	cc.validatePythonSuite(c, p)
	if cc.Enabled && cc.File == "" && len(cc.Checks) > 0 && allZero(len(cc.Checks), func(i int) *float64 { return cc.Checks[i].Weight }, DefaultCheckWeight) {
		c.failf(joinKey(p, "checks"), "every check's weight is 0, so no check can reach a scored verdict and custom_checks would "+
			"be left unscored on every trial after the agent's budget is spent; give at least one check a positive weight")
	}
}

// SupportedCheckInterfaces are the checks_interface versions a Python suite may
// declare (custom_checks.interface_version, and its @init at grade time).
var SupportedCheckInterfaces = []string{"1.0"}

// validatePythonSuite checks the Python suite's keys (file, relative_imports,
// timeout_seconds, interface_version); whether file is among the tool_artifacts is
// the TaskDescription's check (validatePythonChecksFile).
func (cc *CustomChecks) validatePythonSuite(c *checker, p string) {
	if cc.File == "" {
		for _, k := range []struct {
			key string
			set bool
		}{{"relative_imports", len(cc.RelativeImports) > 0}, {"timeout_seconds", cc.TimeoutSeconds != 0}, {"interface_version", cc.InterfaceVersion != ""}} {
			if k.set {
				c.failf(joinKey(p, k.key), "only with custom_checks.file, the Python suite it configures")
			}
		}
		return
	}
	fp := joinKey(p, "file")
	switch clean := path.Clean(cc.File); {
	case path.IsAbs(cc.File):
		c.failf(fp, "%q is an absolute path; want a path among the task's tool_artifacts", cc.File)
	case clean == ".." || strings.HasPrefix(clean, "../"):
		c.failf(fp, "%q leaves the task's tool_artifacts", cc.File)
	case clean != cc.File:
		c.failf(fp, "%q is not a clean path; write %q, as tool_artifacts names it", cc.File, clean)
	case path.Ext(cc.File) != ".py":
		c.failf(fp, "%q is not a Python file (.py)", cc.File)
	}
	dir := path.Dir(cc.File)
	for i, ri := range cc.RelativeImports {
		ip := joinIndex(joinKey(p, "relative_imports"), i)
		joined := path.Join(dir, ri)
		switch {
		case ri == "":
			c.failf(ip, "required")
		case path.IsAbs(ri):
			c.failf(ip, "%q is an absolute path; want a folder relative to the folder of %q", ri, cc.File)
		case joined == ".." || strings.HasPrefix(joined, "../"):
			c.failf(ip, "%q from the folder of %q leaves the task's tool_artifacts", ri, cc.File)
		}
	}
	c.seconds(joinKey(p, "timeout_seconds"), cc.TimeoutSeconds)
	if v := cc.InterfaceVersion; v != "" && !isMember(v, SupportedCheckInterfaces) {
		c.failf(joinKey(p, "interface_version"), "%q is not supported (supported: %s)", v, quotedList(SupportedCheckInterfaces))
	}
}

func quotedList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, ", ")
}

// allZero reports whether each of n weights (nil meaning def) is 0.
func allZero(n int, weight func(i int) *float64, def float64) bool {
	for i := range n {
		w := def
		if p := weight(i); p != nil {
			w = *p
		}
		if w != 0 {
			return false
		}
	}
	return true
}

// ConfiguredComponents lists, in component order, the components this block asks to be
// scored: those with a key whose evaluator produces a score. A block the runner would
// only record a skip for (golden_actions with hash_enabled false, a custom_checks
// block left disabled) configures nothing.
func (g *GradingConfig) ConfiguredComponents() []string {
	var out []string
	if sc := g.StateChecks; sc != nil && (sc.HashEnabled || len(sc.JSONPaths) > 0 || len(sc.DBProbes) > 0) {
		out = append(out, ComponentStateChecks)
	}
	if tr := g.TranscriptRules; tr != nil && (len(tr.MustContain) > 0 || len(tr.DisallowRegex) > 0 || tr.MaxTurns != nil ||
		tr.MinAssistantTurns != nil || len(tr.RequiredActions) > 0 || len(tr.CommunicateInfo) > 0) {
		out = append(out, ComponentTranscriptRules)
	}
	if tc := g.TraceChecks; tc != nil && (len(tc.Constraints) > 0 || len(tc.Alternatives) > 0) {
		out = append(out, ComponentTraceChecks)
	}
	if g.LLMJudge != nil {
		out = append(out, ComponentLLMJudge)
	}
	if cc := g.CustomChecks; cc != nil && cc.Enabled && (len(cc.Checks) > 0 || cc.File != "") {
		out = append(out, ComponentCustomChecks)
	}
	return out
}

// validateFold refuses, before any token is spent, a block whose fold could never
// grade as authored: a configured component with no weight (the runner's fold would
// answer MissingComponentWeight on every trial), weighted shares that sum to zero over
// the configured components (every trial would fail with no share to divide by), and a
// 0 weight under all or any, which read no share, so the component the author meant to
// exclude is folded anyway.
func (g *GradingConfig) validateFold(c *checker, p string) {
	configured := g.ConfiguredComponents()
	var missing []string
	for _, name := range configured {
		if _, ok := g.Weights[name]; !ok {
			missing = append(missing, name)
		}
	}
	wp := joinKey(p, "weights")
	if len(missing) > 0 {
		c.failf(wp, "%s %s configured but weights declares no share for %s (weights declares %s): the fold would refuse every trial "+
			"with MissingComponentWeight after the agent's budget is spent; declare weights.%s",
			strings.Join(missing, ", "), isAre(len(missing)), itThem(len(missing)), describeShares(g.Weights), strings.Join(missing, ", weights."))
		return
	}
	method := g.CombineMethod
	if method == "" {
		method = CombineWeighted
	}
	switch method {
	case CombineWeighted:
		var sum float64
		shares := make([]string, len(configured))
		for i, name := range configured {
			sum += g.Weights[name]
			shares[i] = fmt.Sprintf("%s=%g", name, g.Weights[name])
		}
		if len(configured) > 0 && sum == 0 {
			c.failf(wp, "the weights of the configured components (%s) sum to zero, so under combine_method weighted the mean has no share "+
				"to divide by and every trial would fail; give at least one configured component a positive weight", strings.Join(shares, ", "))
		}
	case CombineAll, CombineAny:
		for _, name := range configured {
			if g.Weights[name] == 0 {
				c.failf(joinKey(wp, name), "0 under combine_method %s excludes nothing: %s reads no share and folds every configured component, "+
					"%s included; drop the %s block, or combine with weighted", method, method, name, name)
			}
		}
	}
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

func itThem(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

func describeShares(w map[string]float64) string {
	if len(w) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(w))
	for _, k := range sortedKeys(w) {
		parts = append(parts, fmt.Sprintf("%s=%g", k, w[k]))
	}
	return strings.Join(parts, ", ")
}
