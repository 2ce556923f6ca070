package grading

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/theory/jsonpath"
	"github.com/theory/jsonpath/spec"

	"tolokaforge.io/operator/api/task"
)

// plan is what preflight compiled, so evaluators never meet a malformed query.
type plan struct {
	paths    []*jsonpath.Path // by state_checks.jsonpaths index; nil for a path_glob check
	matches  []*regexp.Regexp // by state_checks.jsonpaths index; nil unless `matches`
	disallow []*regexp.Regexp // by transcript_rules.disallow_regex index
}

// coreOnlyRoots are the roots the core engine composes for JSONPath and the runner
// does not: an assertion there would score 0.0, indistinguishable from an agent that
// failed it.
var coreOnlyRoots = map[string]bool{
	"filesystem": true, "agent": true, "user": true, "mock_web_url": true, "rag_corpus_dir": true,
}

// preflight runs the refusals of the error table that need no state, in the order the
// table's rows are decided. Nothing has touched the trial's database when it fails.
func preflight(g *gradeCtx) (*plan, error) {
	p := &plan{}
	if sc := g.stateChecks(); sc != nil {
		if err := p.compileJSONPaths(g.id, sc); err != nil {
			return nil, err
		}
		if err := requireDatabase(g, sc); err != nil {
			return nil, err
		}
		if err := soleProbeSource(g.id, sc); err != nil {
			return nil, err
		}
		if sc.HashEnabled && len(sc.JSONPaths) > 0 && sc.HashWeight == nil {
			return nil, notGradeable(g.id, fmt.Sprintf(
				"ValueError: state_checks.hash.weight is required when a hash verdict and a JSONPath score are both real "+
					"(hash_enabled with %d jsonpaths) and nothing says how to fold them; declare state_checks.hash_weight in [0, 1]",
				len(sc.JSONPaths)), nil)
		}
		for i, probe := range sc.DBProbes {
			if _, err := jsonpath.Parse(probe.Query); err != nil {
				return nil, notAsAuthored(g.id, fmt.Sprintf("state_checks.db_probes[%d] (id %q) query '%s' is not an RFC 9535 JSONPath query: %v",
					i, probe.ID, probe.Query, err))
			}
		}
	}
	if tr := g.cfg.TranscriptRules; tr != nil && g.wants(task.ComponentTranscriptRules) {
		for i, expr := range tr.DisallowRegex {
			re, err := regexp.Compile(expr)
			if err != nil {
				return nil, notAsAuthored(g.id, fmt.Sprintf("transcript_rules.disallow_regex[%d] %q is not an RE2 expression: %v", i, expr, err))
			}
			p.disallow = append(p.disallow, re)
		}
	}
	return p, nil
}

func (p *plan) compileJSONPaths(id string, sc *task.StateChecks) error {
	p.paths = make([]*jsonpath.Path, len(sc.JSONPaths))
	p.matches = make([]*regexp.Regexp, len(sc.JSONPaths))
	for i, c := range sc.JSONPaths {
		if c.Matches != nil {
			re, err := regexp.Compile(*c.Matches)
			if err != nil {
				return notAsAuthored(id, fmt.Sprintf("state_checks.jsonpaths[%d].matches %q is not an RE2 expression: %v", i, *c.Matches, err))
			}
			p.matches[i] = re
		}
		if c.Path == "" {
			continue
		}
		path, err := jsonpath.Parse(c.Path)
		if err != nil {
			return notAsAuthored(id, fmt.Sprintf("state_checks.jsonpaths[%d].path '%s' is not an RFC 9535 JSONPath query: %v", i, c.Path, err))
		}
		if root := rootName(path); coreOnlyRoots[root] {
			return notAsAuthored(id, fmt.Sprintf(
				"state_checks.jsonpaths declares path '%s', which addresses state the runner's JSONPath grading does not carry "+
					"(jsonpaths[%d] is rooted at %s, which only the core engine composes; the runner's root holds db alone). "+
					"For a file use path_glob: with contains_ci:; for anything else the trial holds, root the path at $.db",
				c.Path, i, root))
		}
		p.paths[i] = path
	}
	return nil
}

// rootName returns the member name a query's first segment selects, when that segment
// is a plain child segment with a single name selector ("$.filesystem", "$['agent']").
func rootName(p *jsonpath.Path) string {
	segs := p.Query().Segments()
	if len(segs) == 0 || segs[0].IsDescendant() {
		return ""
	}
	sels := segs[0].Selectors()
	if len(sels) != 1 {
		return ""
	}
	if n, ok := sels[0].(spec.Name); ok {
		return string(n)
	}
	return ""
}

// provisionsDatabase reports whether RegisterTrial gave the trial a database: a task
// declaring no tables, schemas or unstable fields has none to assert over.
func provisionsDatabase(st *task.InitialState) bool {
	return st != nil && (len(st.Tables) > 0 || len(st.Schemas) > 0 || len(st.UnstableFields) > 0)
}

const noDatabase = "reads the trial's database, but the task's initial_state provisions none (it declares no tables, schemas or unstable fields)"

func requireDatabase(g *gradeCtx, sc *task.StateChecks) error {
	if provisionsDatabase(g.initialState()) {
		return nil
	}
	for i, c := range sc.JSONPaths {
		if c.Path != "" {
			return notAsAuthored(g.id, fmt.Sprintf(
				"state_checks.jsonpaths[%d] (path '%s') %s; either provision the tables it reads in initial_state, "+
					"or assert on what the trial does hold (a file: path_glob: with contains_ci:)", i, c.Path, noDatabase))
		}
	}
	if sc.HashEnabled {
		return notAsAuthored(g.id, fmt.Sprintf(
			"state_checks.hash (hash_enabled: true, %d golden actions) %s; either provision the tables the golden actions "+
				"write in initial_state, or set state_checks.hash_enabled: false", len(sc.GoldenActions), noDatabase))
	}
	if len(sc.DBProbes) > 0 {
		return notAsAuthored(g.id, fmt.Sprintf(
			"state_checks.db_probes[0] (id %q) %s; either provision the tables it queries in initial_state, or drop state_checks.db_probes",
			sc.DBProbes[0].ID, noDatabase))
	}
	return nil
}

// soleProbeSource refuses a probe score beside a hash verdict or a JSONPath score: two
// verdicts for one component with no declared share between them. It is decided before
// the hash weight is read, so a refused block is never answered with a weight demand.
func soleProbeSource(id string, sc *task.StateChecks) error {
	if len(sc.DBProbes) == 0 {
		return nil
	}
	var beside []string
	if sc.HashEnabled {
		beside = append(beside, "an enabled hash (state_checks.hash_enabled: true)")
	}
	if len(sc.JSONPaths) > 0 {
		beside = append(beside, fmt.Sprintf("%d state_checks.jsonpaths", len(sc.JSONPaths)))
	}
	if len(beside) == 0 {
		return nil
	}
	return notGradeable(id, fmt.Sprintf(
		"ValueError: state_checks.db_probes is the sole state source for a task that declares it, yet this task also declares %s: "+
			"two verdicts for one state_checks component with no declared share between them; drop the probes or the other source",
		strings.Join(beside, " and ")), nil)
}
