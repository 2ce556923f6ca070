package pack

import (
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"tolokaforge.io/operator/api/task"
)

// grading converts grading.yaml (Tolokaforge's host schema, notes §5.1) to
// TaskDescription.grading (spec/grading-config.md).
func (c *converter) grading(t *mapping) error {
	name, err := t.str("grading")
	if err != nil {
		return err
	}
	if name == "" {
		if ok, err := c.exists("grading.yaml"); err != nil {
			return convError(t.file, "grading", "%v", err)
		} else if !ok {
			c.rep.add(t.file, "grading", "absent and no grading.yaml: the task is not graded")
			return nil
		}
		name = "grading.yaml"
	}
	data, err := c.read(name)
	if err != nil {
		return convError(t.file, "grading", "%v", err)
	}
	doc, err := c.parse(name, data)
	if err != nil {
		return err
	}
	g, err := asMapping(c.file(name), "", doc)
	if err != nil {
		return err
	}
	cfg := &task.GradingConfig{}
	hasCombine := g.has("combine")
	if err := c.combine(g, cfg); err != nil {
		return err
	}
	if err := c.stateChecks(g, cfg); err != nil {
		return err
	}
	if err := c.transcriptRules(g, cfg); err != nil {
		return err
	}
	if err := c.judge(g, cfg); err != nil {
		return err
	}
	if err := c.traceChecks(g, cfg); err != nil {
		return err
	}
	if err := c.customChecks(g, cfg); err != nil {
		return err
	}
	if !hasCombine {
		c.upstreamDefaultWeights(g.file, cfg)
	}
	g.leftovers(&c.rep, "no TaskDescription field takes it")
	c.td.Grading = cfg
	return nil
}

// upstreamDefaultWeights gives a grading.yaml without a combine block the shares
// Tolokaforge grades it with (notes §5.1, §5.3): its native adapter sends weights
// {state_checks: 1} with pass_threshold 1.0 under the weighted method, and its
// runner's weighted fold reads weights.get(name, 1.0), so every other component the
// file declares (transcript_rules, llm_judge, trace_checks, custom_checks) counts at 1.0. Writing those shares
// out keeps the components: our fold refuses a component without a weight rather
// than inventing one.
func (c *converter) upstreamDefaultWeights(file string, cfg *task.GradingConfig) {
	one := 1.0
	cfg.CombineMethod = task.CombineWeighted
	cfg.PassThreshold = &one
	cfg.Weights = map[string]float64{task.ComponentStateChecks: 1}
	if cfg.TranscriptRules != nil {
		cfg.Weights[task.ComponentTranscriptRules] = 1
	}
	if cfg.LLMJudge != nil {
		cfg.Weights[task.ComponentLLMJudge] = 1
	}
	if cfg.TraceChecks != nil {
		cfg.Weights[task.ComponentTraceChecks] = 1
	}
	if cfg.CustomChecks != nil {
		cfg.Weights[task.ComponentCustomChecks] = 1
	}
	var shares []string
	for _, name := range task.ComponentNames() {
		if w, ok := cfg.Weights[name]; ok {
			shares = append(shares, fmt.Sprintf("%s=%g", name, w))
		}
	}
	c.rep.add(file, "combine", "absent: weighted with %s and pass_threshold 1, as Tolokaforge grades a grading.yaml without one "+
		"(its native adapter's weights {state_checks: 1}, its runner's default share 1.0 for every other component)", strings.Join(shares, ", "))
}

// Tolokaforge's combine methods: all_pass and any_pass are its spellings of
// all and any.
var combineMethods = map[string]task.CombineMethod{
	"weighted": task.CombineWeighted, "all": task.CombineAll, "any": task.CombineAny,
	"all_pass": task.CombineAll, "any_pass": task.CombineAny,
}

func (c *converter) combine(g *mapping, cfg *task.GradingConfig) error {
	if !g.has("combine") {
		// The shares are set once every component is read (upstreamDefaultWeights).
		g.take("combine")
		return nil
	}
	m, err := g.sub("combine")
	if err != nil {
		return err
	}
	method, err := m.str("method")
	if err != nil {
		return err
	}
	if method != "" {
		cm, ok := combineMethods[method]
		if !ok {
			return convError(m.file, m.at("method"), "%q is not one of weighted, all, any, all_pass, any_pass", method)
		}
		cfg.CombineMethod = cm
	}
	w, err := m.sub("weights")
	if err != nil {
		return err
	}
	cfg.Weights = map[string]float64{}
	for _, k := range w.keys {
		v, err := w.number(k)
		if err != nil {
			return err
		}
		if v != nil {
			cfg.Weights[k] = *v
		}
	}
	if cfg.PassThreshold, err = m.number("pass_threshold"); err != nil {
		return err
	}
	m.leftovers(&c.rep, "combine has method, weights and pass_threshold")
	return nil
}

func (c *converter) stateChecks(g *mapping, cfg *task.GradingConfig) error {
	if !g.has("state_checks") {
		g.take("state_checks")
		return nil
	}
	m, err := g.sub("state_checks")
	if err != nil {
		return err
	}
	sc := &task.StateChecks{}
	if m.has("hash") {
		h, err := m.sub("hash")
		if err != nil {
			return err
		}
		if b, err := h.boolean("enabled"); err != nil {
			return err
		} else if b != nil {
			sc.HashEnabled = *b
		}
		if sc.HashWeight, err = h.number("weight"); err != nil {
			return err
		}
		if s, err := h.str("expected_state_hash"); err != nil {
			return err
		} else if s != "" {
			sc.ExpectedHash = &s
		}
		declared := h.has("golden_actions")
		actions, err := h.list("golden_actions")
		if err != nil {
			return err
		}
		if declared && actions != nil {
			// golden_actions: [] is a declaration (the golden state is the initial
			// state: a refusal task); absent is no source at all.
			sc.GoldenActions = []task.GoldenAction{}
		}
		for i, n := range actions {
			a, err := c.action(h.file, fmt.Sprintf("%s[%d]", h.at("golden_actions"), i), n)
			if err != nil {
				return err
			}
			sc.GoldenActions = append(sc.GoldenActions, task.GoldenAction{ToolName: a.name, Arguments: a.args})
		}
		h.take("description") // prose for the pack's reader; nothing grades it
		h.leftovers(&c.rep, "hash has enabled, weight, golden_actions and expected_state_hash")
	} else {
		m.take("hash")
	}
	paths, err := m.list("jsonpaths")
	if err != nil {
		return err
	}
	for i, n := range paths {
		j, err := c.jsonPath(m.file, fmt.Sprintf("%s[%d]", m.at("jsonpaths"), i), n)
		if err != nil {
			return err
		}
		sc.JSONPaths = append(sc.JSONPaths, j)
	}
	if b, err := m.boolean("db_hash_check"); err != nil {
		return err
	} else if b != nil && *b {
		// Upstream compares the end state's hash with hash.expected_state_hash
		// and, with nothing to compare with, scores 1.0.
		if sc.ExpectedHash != nil || sc.GoldenActions != nil {
			sc.HashEnabled = true
		} else {
			c.rep.add(m.file, m.at("db_hash_check"), "nothing to compare the end state with (no hash.expected_state_hash or golden_actions): upstream scores it 1.0, so it grades nothing here either")
		}
	}
	if err := c.fileChecks(m, sc); err != nil {
		return err
	}
	if m.has("env_assertions") {
		if n := m.vals["env_assertions"]; n.Kind != yaml.SequenceNode || len(n.Content) > 0 {
			return convError(m.file, m.at("env_assertions"), "cannot be honoured: an env assertion calls a function of upstream's Python environment, which the runner does not have; express it as jsonpaths over the tables or a custom check")
		}
	}
	m.take("env_assertions")
	m.leftovers(&c.rep, "not a key of Tolokaforge's state_checks")
	if sc.HashEnabled || sc.GoldenActions != nil || sc.ExpectedHash != nil || len(sc.JSONPaths) > 0 || sc.HashWeight != nil {
		cfg.StateChecks = sc
	}
	return nil
}

type action struct {
	name string
	args []byte
}

// action reads a golden or required action: Tolokaforge writes name and
// kwargs; tool_name and arguments are accepted too.
func (c *converter) action(file, path string, n *yaml.Node) (action, error) {
	m, err := asMapping(file, path, n)
	if err != nil {
		return action{}, err
	}
	var a action
	for _, key := range []string{"name", "tool_name"} {
		if s, err := m.str(key); err != nil {
			return a, err
		} else if s != "" {
			a.name = s
		}
	}
	if a.name == "" {
		return a, convError(file, path, "names no tool (name)")
	}
	for _, key := range []string{"kwargs", "arguments"} {
		if raw, err := m.object(key); err != nil {
			return a, err
		} else if raw != nil {
			a.args = raw
		}
	}
	m.leftovers(&c.rep, "an action has name and kwargs")
	return a, nil
}

// fileChecks maps state_checks.files ({path, must_exist, must_contain}) onto
// path_glob checks over the trial's files: one check per assertion.
func (c *converter) fileChecks(m *mapping, sc *task.StateChecks) error {
	files, err := m.list("files")
	if err != nil {
		return err
	}
	for i, n := range files {
		at := fmt.Sprintf("%s[%d]", m.at("files"), i)
		f, err := asMapping(m.file, at, n)
		if err != nil {
			return err
		}
		p, err := f.str("path")
		if err != nil {
			return err
		}
		glob, ok := agentPath(p)
		if !ok {
			return convError(m.file, joinPath(at, "path"), "%q is outside the agent's files: a file check reads the trial's directory", p)
		}
		exist, err := f.boolean("must_exist")
		if err != nil {
			return err
		}
		if exist != nil {
			b := true
			chk := task.JSONPathCheck{PathGlob: glob, Description: p + " exists"}
			if *exist {
				chk.Exists = &b
			} else {
				chk.Absent, chk.Description = &b, p+" is absent"
			}
			sc.JSONPaths = append(sc.JSONPaths, chk)
		}
		for _, op := range []string{"must_contain", "must_not_contain"} {
			s, err := f.str(op)
			if err != nil {
				return err
			}
			if s == "" {
				continue
			}
			chk := task.JSONPathCheck{PathGlob: glob, Description: fmt.Sprintf("%s %s %q", p, strings.ReplaceAll(op, "_", " "), s)}
			if op == "must_contain" {
				chk.Contains, _ = json.Marshal(s)
			} else {
				return convError(m.file, joinPath(at, op), "cannot be honoured: a path_glob check has no negated contains")
			}
			sc.JSONPaths = append(sc.JSONPaths, chk)
		}
		if len(f.keys) > 0 && exist == nil && !f.has("must_contain") {
			return convError(m.file, at, "a file check needs must_exist or must_contain")
		}
		f.leftovers(&c.rep, "a file check has path, must_exist and must_contain")
	}
	return nil
}

func (c *converter) jsonPath(file, path string, n *yaml.Node) (task.JSONPathCheck, error) {
	var j task.JSONPathCheck
	m, err := asMapping(file, path, n)
	if err != nil {
		return j, err
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{"path", &j.Path}, {"path_glob", &j.PathGlob}, {"description", &j.Description}} {
		if *f.dst, err = m.str(f.key); err != nil {
			return j, err
		}
	}
	for _, f := range []struct {
		key string
		dst *[]byte
	}{{"equals", (*[]byte)(&j.Equals)}, {"not_equals", (*[]byte)(&j.NotEquals)}, {"contains", (*[]byte)(&j.Contains)},
		{"gt", (*[]byte)(&j.GT)}, {"gte", (*[]byte)(&j.GTE)}, {"lt", (*[]byte)(&j.LT)}, {"lte", (*[]byte)(&j.LTE)}} {
		if m.has(f.key) {
			if *f.dst, err = m.raw(f.key); err != nil {
				return j, err
			}
		}
	}
	for _, f := range []struct {
		key string
		dst **string
	}{{"equals_ci", &j.EqualsCI}, {"contains_ci", &j.ContainsCI}, {"matches", &j.Matches}} {
		if m.has(f.key) {
			s, err := m.str(f.key)
			if err != nil {
				return j, err
			}
			*f.dst = &s
		}
	}
	for _, f := range []struct {
		key string
		dst **bool
	}{{"exists", &j.Exists}, {"absent", &j.Absent}} {
		if *f.dst, err = m.boolean(f.key); err != nil {
			return j, err
		}
	}
	if j.Count, err = m.integer("count"); err != nil {
		return j, err
	}
	if j.PathGlob != "" {
		g, ok := agentPath(j.PathGlob)
		if !ok {
			return j, convError(file, joinPath(path, "path_glob"), "%q is outside the agent's files (%s...): path_glob reads the trial's directory", j.PathGlob, agentVisible)
		}
		j.PathGlob = g
	}
	m.leftovers(&c.rep, "a JSONPath check has path or path_glob, one operator and description")
	return j, nil
}

func (c *converter) transcriptRules(g *mapping, cfg *task.GradingConfig) error {
	if !g.has("transcript_rules") {
		g.take("transcript_rules")
		return nil
	}
	m, err := g.sub("transcript_rules")
	if err != nil {
		return err
	}
	tr := &task.TranscriptRules{}
	if tr.MustContain, err = m.strings("must_contain"); err != nil {
		return err
	}
	if phrases, err := m.strings("must_contain_phrases"); err != nil {
		return err
	} else if len(phrases) > 0 {
		// Upstream's model has no such key and ignores it; its author meant
		// must_contain, so it grades as that.
		tr.MustContain = append(tr.MustContain, phrases...)
		c.rep.add(m.file, m.at("must_contain_phrases"), "graded as must_contain (Tolokaforge's TranscriptRulesConfig has no such key and ignores it)")
	}
	if tr.DisallowRegex, err = m.strings("disallow_regex"); err != nil {
		return err
	}
	if tr.MaxTurns, err = m.integer("max_turns"); err != nil {
		return err
	}
	if tr.MinAssistantTurns, err = m.integer("min_assistant_turns"); err != nil {
		return err
	}
	actions, err := m.list("required_actions")
	if err != nil {
		return err
	}
	for i, n := range actions {
		p := fmt.Sprintf("%s[%d]", m.at("required_actions"), i)
		ra, err := c.requiredAction(m.file, p, n)
		if err != nil {
			return err
		}
		tr.RequiredActions = append(tr.RequiredActions, ra)
	}
	infos, err := m.list("communicate_info")
	if err != nil {
		return err
	}
	for i, n := range infos {
		p := fmt.Sprintf("%s[%d]", m.at("communicate_info"), i)
		im, err := asMapping(m.file, p, n)
		if err != nil {
			return err
		}
		var ci task.CommunicateInfo
		if ci.Info, err = im.str("info"); err != nil {
			return err
		}
		if ci.Info == "" {
			return convError(m.file, joinPath(p, "info"), "required")
		}
		if ci.Required, err = im.boolean("required"); err != nil {
			return err
		}
		im.leftovers(&c.rep, "communicate_info has info and required")
		tr.CommunicateInfo = append(tr.CommunicateInfo, ci)
	}
	if m.has("tool_expectations") {
		te, err := m.sub("tool_expectations")
		if err != nil {
			return err
		}
		required, err := te.strings("required_tools")
		if err != nil {
			return err
		}
		for _, name := range required {
			// A required tool is a required action compared by name only.
			none := []string{}
			tr.RequiredActions = append(tr.RequiredActions, task.RequiredAction{
				ActionID: "required_tool_" + name, Requestor: task.RequestorAssistant, ToolName: name, CompareArgs: &none,
			})
		}
		te.leftovers(&c.rep, "disallowed tools have no transcript rule; express them as trace_checks (kind absent, match {tool: NAME}), which the import keeps")
	} else {
		m.take("tool_expectations")
	}
	m.leftovers(&c.rep, "not a key of Tolokaforge's transcript_rules")
	cfg.TranscriptRules = tr
	return nil
}

func (c *converter) requiredAction(file, path string, n *yaml.Node) (task.RequiredAction, error) {
	var ra task.RequiredAction
	m, err := asMapping(file, path, n)
	if err != nil {
		return ra, err
	}
	if ra.ActionID, err = m.str("action_id"); err != nil {
		return ra, err
	}
	if ra.ActionID == "" {
		return ra, convError(file, joinPath(path, "action_id"), "required")
	}
	req, err := m.str("requestor")
	if err != nil {
		return ra, err
	}
	ra.Requestor = task.Requestor(req)
	for _, key := range []string{"name", "tool_name"} {
		if s, err := m.str(key); err != nil {
			return ra, err
		} else if s != "" {
			ra.ToolName = s
		}
	}
	if ra.ToolName == "" {
		return ra, convError(file, path, "names no tool (name)")
	}
	if ra.Arguments, err = m.object("arguments"); err != nil {
		return ra, err
	}
	if m.vals["compare_args"] != nil && !isNull(m.vals["compare_args"]) {
		ca, err := m.strings("compare_args")
		if err != nil {
			return ra, err
		}
		if ca == nil {
			ca = []string{}
		}
		ra.CompareArgs = &ca
	} else {
		m.take("compare_args")
	}
	m.leftovers(&c.rep, "a required action has action_id, requestor, name, arguments and compare_args")
	return ra, nil
}

// judge maps Tolokaforge's llm_judge (a model_ref and a free-text rubric)
// onto the rubric judge: the text becomes the instructions and one graded
// criterion asks whether the transcript meets them.
func (c *converter) judge(g *mapping, cfg *task.GradingConfig) error {
	if !g.has("llm_judge") {
		g.take("llm_judge")
		return nil
	}
	m, err := g.sub("llm_judge")
	if err != nil {
		return err
	}
	ref, err := m.str("model_ref")
	if err != nil {
		return err
	}
	rubric, err := m.str("rubric")
	if err != nil {
		return err
	}
	if ref == "" {
		// Tolokaforge forwards the judge only when model_ref is set.
		m.leftovers(&c.rep, "llm_judge without model_ref is not run (as in Tolokaforge)")
		return nil
	}
	if rubric == "" {
		return convError(m.file, m.at("rubric"), "required with model_ref")
	}
	if b, err := m.boolean("agentic"); err != nil {
		return err
	} else if b != nil && *b {
		return convError(m.file, m.at("agentic"), "cannot be honoured: the runner's judge reads the transcript and calls no tools of its own; set agentic: false")
	}
	if packs, err := m.strings("tool_packs"); err != nil {
		return err
	} else if len(packs) > 0 {
		return convError(m.file, m.at("tool_packs"), "cannot be honoured: the runner's judge has no tool packs (%s)", strings.Join(packs, ", "))
	}
	instructions := rubric
	if sp, err := m.str("system_prompt"); err != nil {
		return err
	} else if sp != "" {
		instructions = sp + "\n\n" + rubric
		c.rep.add(m.file, m.at("system_prompt"), "put before the rubric in the judge's instructions (the runner's judge keeps its own system prompt)")
	}
	if m.has("output_schema") {
		if _, err := m.object("output_schema"); err != nil {
			return err
		}
		c.rep.add(m.file, m.at("output_schema"), "the runner's judge answers per criterion ({criteria: [{id, met, score}]}); the rubric's one graded criterion carries the score upstream's schema asked for")
	} else {
		m.take("output_schema")
	}
	cfg.LLMJudge = &task.LLMJudge{
		ModelRef: ref,
		Rubric: task.Rubric{Instructions: instructions, Criteria: []task.Criterion{{
			ID: "rubric", Description: "The transcript meets the rubric in the instructions.", Kind: task.CriterionGraded,
		}}},
	}
	c.rep.add(m.file, m.at("rubric"), "the free-text rubric became the judge's instructions with one graded criterion \"rubric\"")
	m.leftovers(&c.rep, "not a key of Tolokaforge's llm_judge")
	return nil
}

// traceChecks keeps grading.yaml's trace_checks, which are written in
// TaskDescription.grading's own keys (spec/grading-config.md, "Trace checks").
// They are decoded and validated here, on their own, so a bad constraint is
// refused at import naming the file and its key path, not after an agent ran.
func (c *converter) traceChecks(g *mapping, cfg *task.GradingConfig) error {
	if !g.has("trace_checks") {
		g.take("trace_checks")
		return nil
	}
	raw, err := g.object("trace_checks")
	if err != nil {
		return err
	}
	one, err := decodeComponent(g.file, task.ComponentTraceChecks, raw)
	if err != nil {
		return err
	}
	cfg.TraceChecks = one.TraceChecks
	return nil
}

// customChecks keeps CEL custom checks: a custom_checks block with a checks
// list in TaskDescription.grading's keys (name, expr, when, weight,
// description). Every expression is compiled here, so one that does not
// compile is refused at import naming its check. Tolokaforge's Python
// custom checks (a block without checks, e.g. {file: checks.py}) cannot run
// in the Go runner and are reported as not mapped.
func (c *converter) customChecks(g *mapping, cfg *task.GradingConfig) error {
	if !g.has("custom_checks") {
		g.take("custom_checks")
		return nil
	}
	m, err := asMapping(g.file, g.at("custom_checks"), g.vals["custom_checks"])
	if err != nil {
		return err
	}
	g.take("custom_checks")
	if !m.has("checks") {
		return c.pythonChecks(g, m, cfg)
	}
	block := map[string]json.RawMessage{}
	for _, k := range []string{"enabled", "fail_on_error", "checks"} {
		if !m.has(k) {
			m.take(k)
			continue
		}
		v, err := m.raw(k)
		if err != nil {
			return err
		}
		block[k] = v
	}
	m.leftovers(&c.rep, "custom_checks keeps enabled, fail_on_error and CEL checks; Python @check files are not run by the Go runner")
	raw, err := json.Marshal(block)
	if err != nil {
		return convError(g.file, g.at("custom_checks"), "%v", err)
	}
	one, err := decodeComponent(g.file, task.ComponentCustomChecks, raw)
	if err != nil {
		return err
	}
	if !one.CustomChecks.Enabled {
		c.rep.add(g.file, m.at("enabled"), "false or absent: the %d CEL checks are kept but not run (a recorded skip); set enabled: true to grade with them",
			len(one.CustomChecks.Checks))
	}
	cfg.CustomChecks = one.CustomChecks
	return nil
}

// pythonChecks keeps a Python custom-check suite (upstream's checks.py with
// the checks_interface API): the file and the .py files of each
// relative_imports folder travel in tool_artifacts and the runner's Python
// host runs the suite. A relative_imports folder is shipped without its
// subfolders: upstream adds the folder itself to the import path.
func (c *converter) pythonChecks(g, m *mapping, cfg *task.GradingConfig) error {
	cc := &task.CustomChecks{}
	file, err := m.str("file")
	if err != nil {
		return err
	}
	if file == "" {
		return convError(m.file, m.path, "a custom_checks block needs checks (CEL) or file (a Python suite)")
	}
	art, err := c.artifact(file)
	if err != nil {
		return convError(m.file, m.at("file"), "%v", err)
	}
	if err := c.ship(art); err != nil {
		return convError(m.file, m.at("file"), "%v", err)
	}
	cc.File = art
	if cc.RelativeImports, err = m.strings("relative_imports"); err != nil {
		return err
	}
	for i, ri := range cc.RelativeImports {
		at := fmt.Sprintf("%s[%d]", m.at("relative_imports"), i)
		dir := path.Clean(path.Join(path.Dir(art), ri))
		if !filepath.IsLocal(filepath.FromSlash(dir)) && dir != "." {
			return convError(m.file, at, "%q leaves the project root %s", ri, c.root.Dir())
		}
		if err := c.shipPyTree(dir, false); err != nil {
			return convError(m.file, at, "%v", err)
		}
	}
	if b, err := m.boolean("enabled"); err != nil {
		return err
	} else if b != nil {
		cc.Enabled = *b
	}
	if cc.FailOnError, err = m.boolean("fail_on_error"); err != nil {
		return err
	}
	if n, err := m.number("timeout_seconds"); err != nil {
		return err
	} else if n != nil {
		if *n <= 0 {
			return convError(m.file, m.at("timeout_seconds"), "%g: want a positive number of seconds", *n)
		}
		cc.TimeoutSeconds = *n
	}
	if cc.InterfaceVersion, err = m.str("interface_version"); err != nil {
		return err
	}
	if w, err := m.number("weight"); err != nil {
		return err
	} else if w != nil && *w != 1 {
		c.rep.add(m.file, m.at("weight"), "not read: the suite's share is combine.weights.custom_checks (upstream reads it there too)")
	}
	m.leftovers(&c.rep, "a Python custom_checks block has enabled, file, relative_imports, timeout_seconds, interface_version, fail_on_error and weight")
	if !cc.Enabled {
		c.rep.add(g.file, m.at("enabled"), "false or absent: the Python suite is kept but not run (a recorded skip); set enabled: true to grade with it")
	}
	cfg.CustomChecks = cc
	return nil
}

// decodeComponent decodes and validates one grading component on its own, in
// a grading block that gives it a share, so the checks that need the whole
// block (weights) wait for the TaskDescription and every other check runs
// now. Errors name the file and the key path from the grading block.
func decodeComponent(file, component string, raw json.RawMessage) (*task.GradingConfig, error) {
	doc, err := json.Marshal(map[string]any{component: raw, "weights": map[string]float64{component: 1}})
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", file, component, err)
	}
	one, err := task.DecodeGradingConfig(doc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return one, nil
}
