package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/dbservice/client"
	"tolokaforge.io/operator/runner/proc"
	"tolokaforge.io/operator/runner/pyenv"
	"tolokaforge.io/operator/runner/tools"
	"tolokaforge.io/operator/runner/tools/pyhost"
)

// AdapterPython names the Python tool host's tools in a tools.Entry.
const AdapterPython = "python"

// pyLaunch is one Python tool's place in the trial's tool host.
type pyLaunch struct {
	spec pyhost.ToolSpec
	// dictTables is the source's extra.dict_tables: table -> key field.
	dictTables map[string]string
}

// registryScript matches a module-level TOOLS assignment: a .py
// mcp_server_script with one is a tool registry the host imports (as
// upstream's orchestrator does), one without is a stdio MCP server.
var registryScript = regexp.MustCompile(`(?m)^TOOLS\s*(:[^=\n]*)?=`)

// planPython resolves a tau_sync or mcp_async tool.
func planPython(src *task.ToolSource) (*pyLaunch, error) {
	if src.ModulePath == "" || src.ClassName == "" {
		return nil, fmt.Errorf("source: a %s tool needs module_path and class_name", src.InvocationStyle)
	}
	style := pyhost.StyleTauSync
	if src.InvocationStyle == task.InvocationMCPAsync {
		style = pyhost.StyleMCPAsync
	}
	dt, err := dictTablesOf(src)
	if err != nil {
		return nil, err
	}
	return &pyLaunch{spec: pyhost.ToolSpec{Style: style, Module: src.ModulePath, Class: src.ClassName}, dictTables: dt}, nil
}

// planRegistry returns the launch of an mcp_server tool whose .py script is
// a registry (TOOLS dict), or nil when the script is a stdio server.
func planRegistry(src *task.ToolSource, remote string, lay layout) (*pyLaunch, error) {
	if src.MCPServerScript == nil || !strings.HasSuffix(*src.MCPServerScript, ".py") {
		return nil, nil
	}
	if _, ok := src.Extra["command"]; ok {
		return nil, nil
	}
	if _, ok := src.Extra["url"]; ok {
		return nil, nil
	}
	script := *src.MCPServerScript
	var code []byte
	if filepath.IsAbs(script) {
		b, err := os.ReadFile(script)
		if err != nil {
			return nil, nil // the stdio path reports a missing script
		}
		code = b
	} else {
		rel := filepath.ToSlash(filepath.Clean(script))
		enc, ok := lay.sources[rel]
		if !ok {
			enc, ok = lay.sources[script]
		}
		if !ok {
			return nil, nil
		}
		b, err := decodeArtifact(enc)
		if err != nil {
			return nil, nil // provision names the bad artifact
		}
		code = b
		script = filepath.Join(lay.artifacts, filepath.FromSlash(rel))
	}
	if !registryScript.Match(code) {
		return nil, nil
	}
	dt, err := dictTablesOf(src)
	if err != nil {
		return nil, err
	}
	return &pyLaunch{spec: pyhost.ToolSpec{Style: pyhost.StyleRegistry, Script: script, Class: remote}, dictTables: dt}, nil
}

func dictTablesOf(src *task.ToolSource) (map[string]string, error) {
	raw, ok := src.Extra["dict_tables"]
	if !ok {
		return nil, nil
	}
	var dt map[string]string
	if err := json.Unmarshal(raw, &dt); err != nil {
		return nil, fmt.Errorf("source.extra.dict_tables: want an object of table name -> key field (strings), got %s", raw)
	}
	for name := range dt {
		if name == "" {
			return nil, fmt.Errorf("source.extra.dict_tables: a table name is empty")
		}
	}
	return dt, nil
}

// pySession is the trial's Python tool host, a cache of the DB service as an
// mcpSession is: inSyncAt is the DB version both hold (at syncEpoch). A call
// first reloads the host if the DB moved (a builtin tool, reset, restore,
// golden replay, grading), then applies the call's record-level changes in
// one PATCH per table guarded by if_version, so a write the runner did not
// see is never overwritten.
type pySession struct {
	cfg   pyhost.Config
	specs []pyhost.ToolSpec
	db    *trialDB
	log   logr.Logger

	broken atomic.Bool
	// restarts counts the host's restarts (the runner's series).
	restarts prometheus.Counter

	mu         sync.Mutex
	host       *pyhost.Host
	dictTables map[string]string
	pks        map[string]string
	inSyncAt   int64
	syncEpoch  int64
}

// startPython starts the trial's host when any tool needs it, loads every
// Python tool and the initial tables, and returns each tool's Info by name.
func (s *Server) startPython(ctx context.Context, t *trial, lay layout, plans []toolPlan, initial map[string]json.RawMessage) (map[string]pyhost.Info, error) {
	var specs []pyhost.ToolSpec
	paths := []string{lay.artifacts}
	dictTables := map[string]string{}
	where := map[string]toolPlan{}
	for _, p := range plans {
		if p.py == nil {
			continue
		}
		spec := p.py.spec
		spec.Name = p.schema.Name
		specs = append(specs, spec)
		where[spec.Name] = p
		if spec.Script != "" {
			if d := filepath.Dir(spec.Script); !contains(paths, d) {
				paths = append(paths, d)
			}
		}
		for tbl, key := range p.py.dictTables {
			if prev, ok := dictTables[tbl]; ok && prev != "" && key != "" && prev != key {
				return nil, fmt.Errorf("%s (%s): source.extra.dict_tables: table %q keyed by %q here and by %q by another tool", p.path, p.schema.Name, tbl, key, prev)
			}
			if key != "" || dictTables[tbl] == "" {
				dictTables[tbl] = key
			}
		}
	}
	if len(specs) == 0 {
		return nil, nil
	}
	pks := map[string]string{}
	if st := t.spec.Task.InitialState; st != nil {
		for _, sc := range st.Schemas {
			if sc.PrimaryKey == "" {
				continue
			}
			if k, ok := dictTables[sc.TableName]; ok {
				if k == "" {
					dictTables[sc.TableName] = sc.PrimaryKey
				}
				continue
			}
			pks[sc.TableName] = sc.PrimaryKey
		}
	}
	python := s.cfg.Python
	if python == "" {
		python = "python3"
	}
	maxOutput, err := maxToolOutput(t.spec.Task.Metadata)
	if err != nil {
		return nil, err
	}
	sess := &pySession{
		cfg: pyhost.Config{Python: python, Dir: lay.artifacts, ScriptDir: lay.dir, Paths: paths,
			Env: s.mcpEnv(lay, nil), Limits: s.cfg.ToolLimits, Logger: t.log.WithName("pyhost"), MaxOutput: maxOutput,
			// This trial's folders and nothing else of the runner's: not
			// another trial, the secrets, the auth token.
			Confine: &proc.Confinement{ReadOnly: paths, ReadWrite: []string{lay.artifacts, lay.files, lay.tmp}}},
		specs: specs, db: t.db, log: t.log, dictTables: dictTables, pks: pks, inSyncAt: -1,
		restarts: s.metrics.pyRestarts,
	}
	t.py = sess
	sess.mu.Lock()
	defer sess.mu.Unlock()
	infos, err := sess.startLocked(ctx)
	if err != nil {
		var le *pyhost.LoadError
		if errors.As(err, &le) {
			if p, ok := where[le.Tool]; ok {
				return nil, fmt.Errorf("%s (%s): load the Python tool: %s", p.path, p.schema.Name, pyenv.RewriteHint(le.Message))
			}
		}
		return nil, fmt.Errorf("start the Python tool host: %w", err)
	}
	epoch := t.db.Epoch()
	if err := sess.host.Set(ctx, initial, sess.dictTables, sess.pks); err != nil {
		return nil, fmt.Errorf("python tools: %w", err)
	}
	sess.inSyncAt, sess.syncEpoch = t.db.Version(), epoch
	return infos, nil
}

// MetaMaxToolOutput is the task metadata key that bounds one tool result in
// bytes, whatever serves the tool: the Python tool host, an MCP server or a
// builtin (default pyhost.DefaultMaxOutput, 1 MiB). A larger result is
// refused to the agent as a tool error naming its size and the limit.
const MetaMaxToolOutput = "max_tool_output_bytes"

// maxToolOutput reads MetaMaxToolOutput from the task's metadata; absent: 0
// (the host's default).
func maxToolOutput(md map[string]json.RawMessage) (int, error) {
	raw, ok := md[MetaMaxToolOutput]
	if !ok {
		return 0, nil
	}
	var n int64
	if err := json.Unmarshal(raw, &n); err != nil || n <= 0 || n > 1<<30 {
		return 0, fmt.Errorf("task.metadata.%s: want a whole number of bytes from 1 to %d, got %s", MetaMaxToolOutput, 1<<30, raw)
	}
	return int(n), nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// startLocked (re)starts the host process and loads the tools.
func (p *pySession) startLocked(ctx context.Context) (map[string]pyhost.Info, error) {
	h, err := pyhost.Start(p.cfg)
	if err != nil {
		return nil, err
	}
	infos, err := h.Load(ctx, p.specs)
	if err != nil {
		h.Close()
		return nil, err
	}
	p.host = h
	p.inSyncAt = -1
	p.broken.Store(false)
	return infos, nil
}

// prepareLocked makes the host usable and holding the DB's current tables.
func (p *pySession) prepareLocked(ctx context.Context) error {
	if p.host == nil || p.broken.Load() {
		if p.host != nil {
			p.host.Close()
			p.host = nil
		}
		p.log.Info("restarting the Python tool host")
		p.restarts.Inc()
		if _, err := p.startLocked(ctx); err != nil {
			p.broken.Store(true)
			return fmt.Errorf("restart the Python tool host: %w", err)
		}
	}
	if p.inSyncAt == p.db.Version() && p.syncEpoch == p.db.Epoch() {
		return nil
	}
	epoch := p.db.Epoch()
	tables, err := p.db.Tables(ctx)
	if err != nil {
		return fmt.Errorf("read the DB tables for the Python tool host: %w", err)
	}
	version := p.db.Version()
	if tables == nil {
		tables = map[string]json.RawMessage{}
	}
	if err := p.host.Set(ctx, tables, p.dictTables, p.pks); err != nil {
		if !errors.Is(err, pyhost.ErrClosed) && ctx.Err() == nil {
			return err
		}
		p.broken.Store(true)
		return err
	}
	p.inSyncAt, p.syncEpoch = version, epoch
	return nil
}

// call runs one tool and writes its changes to the DB.
func (p *pySession) call(ctx context.Context, name string, args json.RawMessage) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.prepareLocked(ctx); err != nil {
		return "", err
	}
	res, err := p.host.Call(ctx, name, args)
	if err != nil {
		var te *pyhost.ToolError
		if errors.As(err, &te) {
			if te.Resync {
				p.inSyncAt = -1
			}
			return "", errors.New(pyenv.RewriteHint(te.Message))
		}
		// The host died or was killed mid-call (a timeout): rebuild it
		// from the DB, which holds nothing of this call.
		p.broken.Store(true)
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fmt.Errorf("python tool %s: %w", name, err)
	}
	for tbl, key := range res.Learned {
		p.dictTables[tbl] = key
	}
	if err := p.applyLocked(ctx, res.Ops); err != nil {
		// The host holds the call's changes, the DB maybe only some: reload.
		p.inSyncAt = -1
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fmt.Errorf("tool %s succeeded but its changes could not be saved: %w", name, err)
	}
	return res.Output, nil
}

// applyLocked writes each changed table in one atomic PATCH guarded by the
// version the host was in sync at.
func (p *pySession) applyLocked(ctx context.Context, ops map[string][]json.RawMessage) error {
	names := make([]string, 0, len(ops))
	for n := range ops {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, tbl := range names {
		list := make([]client.Operation, 0, len(ops[tbl]))
		for i, raw := range ops[tbl] {
			var op client.Operation
			if err := json.Unmarshal(raw, &op); err != nil {
				return fmt.Errorf("table %q: operation %d from the Python tool host: %w", tbl, i, err)
			}
			list = append(list, op)
		}
		v := p.inSyncAt
		if _, err := p.db.patchIf(ctx, tbl, list, &v); err != nil {
			return fmt.Errorf("write table %q to the DB service: %w", tbl, err)
		}
		p.inSyncAt = p.db.Version()
	}
	return nil
}

func (p *pySession) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.host == nil {
		return nil
	}
	err := p.host.Close()
	p.host = nil
	return err
}

// patchIf is Patch with an if_version guard.
func (d *trialDB) patchIf(ctx context.Context, table string, ops []client.Operation, ifVersion *int64) (int, error) {
	var err error
	done := d.call(&err)
	resp, err := d.c.Patch(ctx, d.id, table, client.PatchRequest{Operations: ops, IfVersion: ifVersion})
	done()
	if err != nil {
		if uncertain(err) {
			d.invalidate()
		}
		return 0, err
	}
	d.observe(resp.Version)
	return resp.AffectedRows, nil
}

// pyTool is one tool served by the trial's Python tool host.
type pyTool struct {
	sess *pySession
	name string
}

func (t *pyTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	return t.sess.call(ctx, t.name, args)
}

// Invalidate implements tools.Stateful: a call that overran its budget left
// the host mid-call.
func (t *pyTool) Invalidate() { t.sess.broken.Store(true) }

// pythonEntry fills a Python tool's entry; a tool without declared
// parameters advertises the schema its class reports (get_info()).
func pythonEntry(e *tools.Entry, p toolPlan, py *pySession, info pyhost.Info) (json.RawMessage, error) {
	e.Adapter = AdapterPython
	e.Tool = &pyTool{sess: py, name: p.schema.Name}
	params := p.schema.Parameters
	if e.Description == "" {
		e.Description = info.Description
	}
	if !hasParameters(params) && hasParameters(info.Parameters) {
		params = info.Parameters
		v, err := tools.NewValidator(params)
		if err != nil {
			return nil, fmt.Errorf("the Python tool's own schema (get_info): %w", err)
		}
		e.Validator = v
	}
	if e.Validator == nil {
		v, err := tools.NewValidator(json.RawMessage(`{"type":"object"}`))
		if err != nil {
			return nil, err
		}
		e.Validator = v
	}
	return params, nil
}
