package runner

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/proc"
	"tolokaforge.io/operator/runner/tools"
	"tolokaforge.io/operator/runner/tools/builtin"
	"tolokaforge.io/operator/runner/tools/envtools"
	"tolokaforge.io/operator/runner/tools/mcpclient"
)

// Names of Tolokaforge's state-convention tools: never offered to an actor.
const (
	stateGetTool = "_tolokaforge_get_state_"
	stateSetTool = "_tolokaforge_set_state_"
)

// selfCommand as an MCP command's argv[0] means the runner's own binary.
const selfCommand = "tolokaforge"

// toolPlan is one declared tool resolved to an adapter, before anything is
// started: every refusal RegisterTrial can make about a tool happens here,
// ahead of any side effect.
type toolPlan struct {
	path    string // "task.agent_tools[2]"
	schema  task.ToolSchema
	timeout time.Duration
	builtin *builtin.Builtin
	mcp     *mcpLaunch
	py      *pyLaunch // tau_sync, mcp_async, or a registry script's tool
	env     string    // a terminal task's tool (envtools), by name
	remote  string    // MCP: the tool's name on the server
	// validator is nil for an MCP tool without declared parameters: its
	// schema comes from the server once it runs.
	validator *tools.Validator
}

// mcpLaunch is how to reach one MCP server; key identifies it within a trial.
type mcpLaunch struct {
	key string
	cfg mcpclient.Config
}

// layout is a trial's directory: files is the file tools' root (and where
// initial_state.filesystem lands), artifacts holds tool_artifacts (and is
// where a relative mcp_server_script resolves), verifier is where each
// test_execution grade builds the verifier's sandbox: beside files, not in
// it, so no file tool's path reaches it.
type layout struct {
	dir, files, artifacts, verifier string
	// tmp is the tools' TMPDIR: writable to them (their confinement
	// reaches neither the trial's own folder nor the machine's /tmp).
	tmp string
	// pack is a read-only copy of the tool_artifacts taken at RegisterTrial:
	// the Python checks import from it, never from artifacts (the tools'
	// working directory and HOME, which they can write).
	pack string
	// sources is the task's tool_artifacts (path -> base64), for planning
	// before they are written.
	sources map[string]string
	// environment is set, for planning, when the task has an environment:
	// its bash, read_file, write_file and list_dir run there (envtools).
	environment bool
}

func newLayout(dir string) layout {
	return layout{dir: dir, files: filepath.Join(dir, "files"), artifacts: filepath.Join(dir, "artifacts"),
		verifier: filepath.Join(dir, "verifier"), pack: filepath.Join(dir, "pack"), tmp: filepath.Join(dir, "tmp")}
}

// planTools resolves both actors' tools.
func (s *Server) planTools(spec *task.TrialSpec, explicit declared, def time.Duration, lay layout) (agent, user []toolPlan, err error) {
	lay.sources = spec.Task.ToolArtifacts
	lay.environment = spec.Task.Environment != nil
	if agent, err = s.planList("task.agent_tools", spec.Task.AgentTools, explicit.agent, def, lay); err != nil {
		return nil, nil, err
	}
	if user, err = s.planList("task.user_tools", spec.Task.UserTools, explicit.user, def, lay); err != nil {
		return nil, nil, err
	}
	return agent, user, nil
}

func (s *Server) planList(base string, list []task.ToolSchema, explicit []presence, def time.Duration, lay layout) ([]toolPlan, error) {
	plans := make([]toolPlan, 0, len(list))
	for i, ts := range list {
		var has presence
		if i < len(explicit) {
			has = explicit[i]
		}
		p := toolPlan{path: fmt.Sprintf("%s[%d]", base, i), schema: ts, timeout: def}
		if has.timeout {
			p.timeout = tools.Seconds(ts.TimeoutS)
		}
		if err := s.planTool(&p, lay); err != nil {
			return nil, fmt.Errorf("%s (%s): %w", p.path, ts.Name, err)
		}
		if p.builtin != nil && !has.category {
			p.schema.Category = p.builtin.Category
		}
		plans = append(plans, p)
	}
	return plans, nil
}

func (s *Server) planTool(p *toolPlan, lay layout) error {
	ts := p.schema
	if ts.Name == stateGetTool || ts.Name == stateSetTool {
		return fmt.Errorf("%q is reserved for the state convention and cannot be offered to an actor", ts.Name)
	}
	if hasParameters(ts.Parameters) {
		v, err := tools.NewValidator(ts.Parameters)
		if err != nil {
			return fmt.Errorf("parameters: invalid JSON Schema: %w", err)
		}
		p.validator = v
	}
	src := ts.Source
	switch {
	case lay.environment && src == nil && envtools.Has(ts.Name):
		// Not the runner's builtin of the same name: the environment's.
		p.env = ts.Name
		if p.validator == nil {
			sch, _ := envtools.Schema(ts.Name)
			v, err := tools.NewValidator(sch.Parameters)
			if err != nil {
				return fmt.Errorf("environment tool %q schema: %w", ts.Name, err)
			}
			p.validator = v
		}
		return nil
	case src == nil || src.Toolset == tools.AdapterBuiltin:
		name := ts.Name
		if src != nil && src.ClassName != "" {
			name = src.ClassName
		}
		b, ok := s.lookupBuiltin(name)
		if !ok {
			return fmt.Errorf("no builtin tool named %q; builtins: %s", name, strings.Join(s.builtinNames(), ", "))
		}
		p.builtin = &b
		if p.validator == nil {
			v, err := tools.NewValidator(b.Parameters)
			if err != nil {
				return fmt.Errorf("builtin %q schema: %w", name, err)
			}
			p.validator = v
		}
		return nil
	case src.InvocationStyle == task.InvocationMCPServer:
		p.remote = ts.Name
		if src.ClassName != "" {
			p.remote = src.ClassName
		}
		py, err := planRegistry(src, p.remote, lay)
		if err != nil {
			return err
		}
		if py != nil {
			p.py = py
			return nil
		}
		launch, err := s.planMCP(src, lay)
		if err != nil {
			return err
		}
		p.mcp = launch
		return nil
	case src.InvocationStyle == task.InvocationTauSync || src.InvocationStyle == task.InvocationMCPAsync:
		py, err := planPython(src)
		if err != nil {
			return err
		}
		p.py = py
		return nil
	}
	return ts.CheckRunnable()
}

func decodeArtifact(enc string) ([]byte, error) { return base64.StdEncoding.DecodeString(enc) }

func hasParameters(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}

func (s *Server) lookupBuiltin(name string) (builtin.Builtin, bool) {
	for _, b := range s.cfg.ExtraBuiltins {
		if b.Name == name {
			return b, true
		}
	}
	return builtin.Lookup(name)
}

func (s *Server) builtinNames() []string {
	names := builtin.Names()
	for _, b := range s.cfg.ExtraBuiltins {
		if _, ok := builtin.Lookup(b.Name); !ok {
			names = append(names, b.Name)
		}
	}
	sort.Strings(names)
	return names
}

// planMCP reads source.extra: command (argv array), url, cwd (relative to the
// trial's directory) and env (object); without command or url,
// mcp_server_script is the executable (a .py script that is not a tool
// registry runs under Config.Python).
func (s *Server) planMCP(src *task.ToolSource, lay layout) (*mcpLaunch, error) {
	var argv []string
	var url, cwd string
	env := map[string]string{}
	if raw, ok := src.Extra["command"]; ok {
		if err := json.Unmarshal(raw, &argv); err != nil || len(argv) == 0 || argv[0] == "" {
			return nil, fmt.Errorf("source.extra.command: want a non-empty JSON array of strings, got %s", raw)
		}
	}
	if raw, ok := src.Extra["url"]; ok {
		if err := json.Unmarshal(raw, &url); err != nil || url == "" {
			return nil, fmt.Errorf("source.extra.url: want a non-empty string, got %s", raw)
		}
	}
	if raw, ok := src.Extra["cwd"]; ok {
		if err := json.Unmarshal(raw, &cwd); err != nil {
			return nil, fmt.Errorf("source.extra.cwd: want a string, got %s", raw)
		}
		rel, err := builtin.CleanRelPath(cwd)
		if err != nil {
			return nil, fmt.Errorf("source.extra.cwd: %s", strings.TrimPrefix(err.Error(), "arguments.path: "))
		}
		cwd = rel
	}
	if raw, ok := src.Extra["env"]; ok {
		if err := json.Unmarshal(raw, &env); err != nil {
			return nil, fmt.Errorf("source.extra.env: want an object of strings, got %s", raw)
		}
	}
	if url != "" && len(argv) > 0 {
		return nil, fmt.Errorf("source.extra: command and url are exclusive")
	}
	if url == "" && len(argv) == 0 {
		if src.MCPServerScript == nil || *src.MCPServerScript == "" {
			return nil, fmt.Errorf("source: an mcp_server tool needs extra.command, extra.url or mcp_server_script")
		}
		script := *src.MCPServerScript
		if !filepath.IsAbs(script) {
			rel, err := builtin.CleanRelPath(script)
			if err != nil {
				return nil, fmt.Errorf("source.mcp_server_script: %s", strings.TrimPrefix(err.Error(), "arguments.path: "))
			}
			script = filepath.Join(lay.artifacts, filepath.FromSlash(rel))
		}
		argv = []string{script}
		if strings.HasSuffix(script, ".py") {
			python := s.cfg.Python
			if python == "" {
				python = "python3"
			}
			argv = []string{python, script}
		}
	}
	if len(argv) > 0 && argv[0] == selfCommand {
		argv = append([]string{s.cfg.SelfExecutable}, argv[1:]...)
	}
	dir := lay.dir
	if cwd != "" && cwd != "." {
		dir = filepath.Join(lay.dir, filepath.FromSlash(cwd))
	}
	cfg := mcpclient.Config{Command: argv, URL: url, Env: s.mcpEnv(lay, env), Limits: s.cfg.ToolLimits}
	if url == "" {
		cfg.Dir = dir
		cfg.Confine = s.mcpConfinement(lay, argv)
	}
	key := url
	if url == "" {
		key = strings.Join(argv, "\x00") + "\x01" + dir + "\x01" + strings.Join(cfg.Env, "\x00")
	}
	return &mcpLaunch{key: key, cfg: cfg}, nil
}

// mcpConfinement is the file system a trial's stdio MCP server may use, as
// the Python tool host's (startPython): read-only the pack's files (and the
// folder of an absolute script), read-write only this trial's artifacts and
// files folders and its TMPDIR; not the trial's own folder (the checks' read-only pack copy
// and the verifier's sandbox live there), another trial, the secrets or the
// auth token. The runner's binary is readable (and executable) so a
// wrapper script can exec `tolokaforge mcp ...`; the system's runtime and
// the server's installation are added by package proc.
func (s *Server) mcpConfinement(lay layout, argv []string) *proc.Confinement {
	c := &proc.Confinement{ReadOnly: []string{lay.artifacts}, ReadWrite: []string{lay.artifacts, lay.files, lay.tmp}}
	for _, a := range argv[1:] {
		// An absolute script (mcp_server_script outside the pack): its folder.
		if filepath.IsAbs(a) && !strings.HasPrefix(a, lay.dir+string(filepath.Separator)) {
			if fi, err := os.Stat(a); err == nil && fi.Mode().IsRegular() {
				c.ReadOnly = append(c.ReadOnly, filepath.Dir(a))
			}
		}
	}
	if s.cfg.SelfExecutable != "" {
		c.ReadOnlyFiles = append(c.ReadOnlyFiles, s.cfg.SelfExecutable)
	}
	c.ReadWrite = append(c.ReadWrite, s.cfg.testToolReadWrite...)
	return c
}

// mcpEnv is what an MCP server gets on top of mcpclient's minimal
// environment (PATH, HOME, LANG; never the runner's own, which holds keys): a
// temp dir inside the trial, where the trial's directories are, the runner's
// MCPEnv and the tool source's env, later entries winning.
func (s *Server) mcpEnv(lay layout, extra map[string]string) []string {
	env := []string{
		"TMPDIR=" + lay.tmp,
		trialTag(lay.dir),
		"TOLOKAFORGE_FILES_DIR=" + lay.files,
	}
	env = append(env, s.cfg.MCPEnv...)
	for _, k := range sortedKeys(extra) {
		env = append(env, k+"="+extra[k])
	}
	return env
}

// declared says which tools spelled out timeout_s and category: decoding
// fills their defaults (30 s, compute), but an absent timeout_s must fall back
// to the request's default_tool_timeout_s first, and an absent category on a
// builtin is the builtin's own.
type declared struct {
	agent, user []presence
}

type presence struct {
	timeout, category bool
}

func declaredFields(specJSON []byte) declared {
	type toolKeys struct {
		TimeoutS *float64 `json:"timeout_s"`
		Category *string  `json:"category"`
	}
	var probe struct {
		Task struct {
			AgentTools []toolKeys `json:"agent_tools"`
			UserTools  []toolKeys `json:"user_tools"`
		} `json:"task"`
	}
	// The strict decoder already accepted the document; this reads presence only.
	_ = json.Unmarshal(specJSON, &probe)
	conv := func(in []toolKeys) []presence {
		out := make([]presence, len(in))
		for i, t := range in {
			out[i] = presence{timeout: t.TimeoutS != nil, category: t.Category != nil}
		}
		return out
	}
	return declared{agent: conv(probe.Task.AgentTools), user: conv(probe.Task.UserTools)}
}
