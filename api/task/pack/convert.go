package pack

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"tolokaforge.io/operator/api/rootfs"
	"tolokaforge.io/operator/api/task"
)

// DefaultInlineLimit is the largest initial state (compact JSON) kept inline
// in the Task; larger ones go to a gzip-compressed ConfigMap so Task objects
// stay far below etcd's object limit.
const DefaultInlineLimit = 256 << 10

// maxFileBytes bounds every file a pack import reads. The largest a Task can
// carry (an initial state in a ConfigMap, gzip-compressed under etcd's
// object limit) is far smaller; the bound keeps a hostile pack from making
// the import read a disk's worth into memory.
const maxFileBytes = 64 << 20

// Options configure a conversion.
type Options struct {
	// Namespace of the manifests; empty leaves it to kubectl.
	Namespace string
	// Labels are added to every Task (for a Campaign's selector).
	Labels map[string]string
	// MCPCommands maps an MCP server script's file name to the argv of the
	// server that replaces it (see mcp.go).
	MCPCommands map[string][]string
	// InlineLimit overrides DefaultInlineLimit (bytes).
	InlineLimit int
	// FilesURL, when set, sends every files bundle to an artifact store
	// instead of a ConfigMap: the Task names FilesURL(packfiles.StoreKey(d))
	// and the caller uploads Manifests.Bundle under Manifests.BundleKey
	// before applying the Task.
	FilesURL func(key string) string
	// Describe, when set, asks a pack's Python tools for the schemas
	// fixtures/tools.json does not give (a tau_sync class's get_info() behind a
	// registry script), once per script, at import; nil offers those tools with
	// upstream's fallback schema. The caller bounds its time.
	Describe Describer
	// builtins is the runner's builtin tool catalog, which tools a task may
	// enable without a schema or a server. Required: conversion stays pure
	// and the caller (the binary) passes the runner's catalog.
	Builtins builtins
}

// builtins is the catalog of tools the runner implements itself.
type builtins interface {
	// Lookup returns the schema of the builtin tool name.
	Lookup(name string) (task.ToolSchema, bool)
	// Names lists every builtin, sorted.
	Names() []string
}

// converted is one task directory converted.
type converted struct {
	Dir string
	// Name is the Task object's name (the task_id made a DNS-1123 label).
	Name string
	// Description is the TaskDescription as the runner will decode it.
	Description *task.TaskDescription
	// Wire is the description JSON with the tables inline; Tables are
	// those tables (nil when the task has none).
	Wire   json.RawMessage
	Tables json.RawMessage
	// InitialUserMessage and MaxTurns are the Task's host-side fields.
	InitialUserMessage string
	MaxTurns           *int32
	Diagnostics        []Diagnostic
}

// converter holds one conversion's state.
type converter struct {
	ctx  context.Context
	dir  string
	root *rootfs.Root // the project root (or dir, for a lone pack): every read goes through it
	// taskRel is dir relative to the root, slash-separated ("" for a lone
	// pack, "tasks/order_53" in a project).
	taskRel string
	name    string // dir's base name, prefixing file names in diagnostics
	opts    Options
	rep     report
	td      task.TaskDescription
	out     converted
	// dictTables: table -> key field of every json_db table written as a
	// dict of records ("" when empty), for Python tools' extra.dict_tables.
	dictTables map[string]string
	// files: InitialState.filesystem (trial-relative path -> content).
	files map[string]string
	// statePrompt is initial_state.system_prompt, the task's fallback.
	statePrompt string
}

// file names a pack file in diagnostics and errors: relative to the root's
// parent (the pack's parent for a lone pack, the project's for a project
// task), so a project file reached through .. reads as what it is.
func (c *converter) file(name string) string {
	if art, err := c.artifact(name); err == nil {
		return filepath.Join(filepath.Base(c.root.Dir()), filepath.FromSlash(art))
	}
	return filepath.Join(c.name, filepath.FromSlash(name))
}

// ProjectRoot is the project a task directory belongs to: the parent of the
// nearest enclosing folder named tasks (a project keeps its packs in
// tasks/<id>/ or tasks/<category>/<id>/ and its shared files beside tasks/).
// A lone pack is its own root. Both are absolute.
func ProjectRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for p := abs; ; {
		parent := filepath.Dir(p)
		if parent == p {
			return abs, nil
		}
		if filepath.Base(p) == "tasks" && p != abs {
			return parent, nil
		}
		p = parent
	}
}

// Convert reads one native task directory.
func Convert(dir string, opts Options) (*converted, error) {
	return ConvertContext(context.Background(), dir, opts)
}

// ConvertContext is Convert ending early, with ctx's error, once ctx is done
// (the CLI's context is canceled by SIGTERM and ^C).
//
// Files are read below the root only: dir, or for a task of a project
// (dir below a folder named tasks) the project root, the folder holding
// tasks/ (ProjectRoot). A path or a symbolic link is followed while it stays
// inside the root and refused, naming it, when it leaves it; files over
// MaxFileBytes and anything but regular files are refused too. Every YAML
// file is refused past the alias budget (MaxAliasNodes, MaxAliasDepth).
func ConvertContext(ctx context.Context, dir string, opts Options) (*converted, error) {
	if opts.Builtins == nil {
		return nil, fmt.Errorf("pack %s: no builtin tool catalog (Options.Builtins)", dir)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("pack %s: %w", dir, err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", dir, err)
	}
	top, err := ProjectRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", dir, err)
	}
	rel, err := filepath.Rel(top, abs)
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", dir, err)
	}
	root, err := rootfs.Open(top)
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", dir, err)
	}
	defer root.Close()
	c := &converter{ctx: ctx, dir: abs, root: root, taskRel: filepath.ToSlash(rel), name: filepath.Base(abs), opts: opts}
	if c.taskRel == "." {
		c.taskRel = ""
	}
	c.out.Dir = dir
	if err := c.convert(); err != nil {
		return nil, err
	}
	c.out.Diagnostics = c.rep.diags
	return &c.out, nil
}

// local is name (slash-separated, relative to the task directory) as a
// path below the root, or an error when it climbs out of it or is absolute.
// In a project, "../../wiki.md" from tasks/<id>/ is the project's wiki.md;
// a lone pack's root is its own directory.
func (c *converter) local(name string) (string, error) {
	rel, err := c.artifact(name)
	if err != nil {
		return "", err
	}
	return filepath.FromSlash(rel), nil
}

// artifact is name (relative to the task directory) relative to the root,
// slash-separated: the key it has in tool_artifacts.
func (c *converter) artifact(name string) (string, error) {
	if filepath.IsAbs(filepath.FromSlash(name)) || strings.HasPrefix(name, "/") {
		return "", fmt.Errorf("%s: %q is an absolute path: a pack names its files relative to its task directory", c.name, name)
	}
	rel := path.Clean(path.Join(c.taskRel, filepath.ToSlash(name)))
	if !filepath.IsLocal(filepath.FromSlash(rel)) {
		if c.taskRel == "" {
			return "", fmt.Errorf("%s: %q leaves the task directory", c.name, name)
		}
		return "", fmt.Errorf("%s: %q leaves the project root %s (the folder that holds tasks/)", c.name, name, c.root.Dir())
	}
	return rel, nil
}

func (c *converter) read(name string) ([]byte, error) {
	if err := c.ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", c.name, err)
	}
	p, err := c.local(name)
	if err != nil {
		return nil, err
	}
	data, err := c.root.ReadFile(p, maxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.name, err)
	}
	return data, nil
}

// exists says whether the pack holds name; a link out of the pack is an
// error, not an absent file.
func (c *converter) exists(name string) (bool, error) {
	p, err := c.local(name)
	if err != nil {
		return false, err
	}
	if _, err := c.root.Stat(p); errors.Is(err, os.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("%s: %w", c.name, err)
	}
	return true, nil
}

// parse reads a pack file's YAML (JSON is YAML) under the alias budget.
func (c *converter) parse(name string, data []byte) (*yaml.Node, error) {
	doc, err := parseYAML(c.ctx, data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.file(name), err)
	}
	return doc, nil
}

func (c *converter) convert() error {
	const taskFile = "task.yaml"
	if ok, err := c.exists(taskFile); err != nil {
		return err
	} else if !ok {
		if h, err := c.isHarbor(); err != nil {
			return err
		} else if h {
			if err := c.harbor(); err != nil {
				return err
			}
			return c.finish()
		}
	}
	data, err := c.read(taskFile)
	if err != nil {
		return err
	}
	doc, err := c.parse(taskFile, data)
	if err != nil {
		return err
	}
	t, err := asMapping(c.file(taskFile), "", doc)
	if err != nil {
		return err
	}
	td := &c.td
	td.AdapterType = task.AdapterNative
	if isTerminalBench(t) {
		if err := c.terminalBench(t); err != nil {
			return err
		}
		return c.finish()
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{"task_id", &td.TaskID}, {"name", &td.Name}, {"category", &td.Category}, {"description", &td.Description}} {
		if *f.dst, err = t.str(f.key); err != nil {
			return err
		}
		if *f.dst == "" {
			return convError(t.file, f.key, "required")
		}
	}
	if at, err := t.str("adapter_type"); err != nil {
		return err
	} else if at != "" && at != string(task.AdapterNative) {
		return convError(t.file, "adapter_type", "%q: only native task directories are imported", at)
	}
	if c.out.Name = objectName(td.TaskID); c.out.Name == "" {
		return convError(t.file, "task_id", "%q has no letters or digits to name a Task with", td.TaskID)
	}
	if n, err := t.integer("max_turns"); err != nil {
		return err
	} else if n != nil {
		if *n < 1 || *n > 1000 {
			return convError(t.file, "max_turns", "%d is outside [1, 1000]", *n)
		}
		v := int32(*n)
		c.out.MaxTurns = &v
	}
	if c.out.InitialUserMessage, err = t.str("initial_user_message"); err != nil {
		return err
	}
	if err := c.initialState(t); err != nil {
		return err
	}
	if err := c.systemPrompt(t); err != nil {
		return err
	}
	if err := c.tools(t); err != nil {
		return err
	}
	if err := c.userSimulator(t); err != nil {
		return err
	}
	if err := c.metadata(t); err != nil {
		return err
	}
	if err := c.grading(t); err != nil {
		return err
	}
	t.leftovers(&c.rep, "no TaskDescription field takes it")
	return c.finish()
}

// finish encodes the TaskDescription and checks it decodes and can run.
func (c *converter) finish() error {
	td := &c.td
	wire, err := task.Encode(td)
	if err != nil {
		return fmt.Errorf("%s: encode the TaskDescription: %w", c.name, err)
	}
	desc, err := task.DecodeTaskDescription(wire)
	if err != nil {
		return fmt.Errorf("%s: the converted TaskDescription does not decode: %w", c.name, err)
	}
	if err := desc.CheckRunnable(); err != nil {
		return fmt.Errorf("%s: %w", c.name, err)
	}
	c.out.Wire, c.out.Description = wire, desc
	return nil
}

var notDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// objectName makes a task_id a DNS-1123 label: lowercase, runs of other
// characters as "-", at most 63 characters.
func objectName(taskID string) string {
	s := notDNS.ReplaceAllString(strings.ToLower(taskID), "-")
	s = strings.Trim(s, "-")
	if len(s) > 63 {
		s = strings.Trim(s[:63], "-")
	}
	return s
}

// systemPrompt follows upstream's order: policies.agent_system_prompt (an
// inline prompt), then the file system_prompt names (in the task, else in
// initial_state), then system_prompt.md, then the description.
func (c *converter) systemPrompt(t *mapping) error {
	name, err := t.str("system_prompt")
	if err != nil {
		return err
	}
	key := "system_prompt"
	if name == "" && c.statePrompt != "" {
		name, key = c.statePrompt, "initial_state.system_prompt"
	}
	if pol := t.vals["policies"]; pol != nil && pol.Kind == yaml.MappingNode {
		pm, err := asMapping(t.file, "policies", pol)
		if err != nil {
			return err
		}
		if p, err := pm.str("agent_system_prompt"); err != nil {
			return err
		} else if strings.TrimSpace(p) != "" {
			c.td.SystemPrompt = p
			if name != "" {
				c.rep.add(t.file, key, "not read: policies.agent_system_prompt is the system prompt (upstream's order)")
			}
			return nil
		}
	}
	if name == "__adapter__" {
		return convError(t.file, key, "\"__adapter__\" asks a harness adapter for the prompt; a native import has none: name the prompt file")
	}
	if name == "" {
		if ok, err := c.exists("system_prompt.md"); err != nil {
			return convError(t.file, "system_prompt", "%v", err)
		} else if ok {
			name = "system_prompt.md"
		}
	}
	if name == "" {
		c.td.SystemPrompt = c.td.Description
		c.rep.add(t.file, "system_prompt", "absent and no system_prompt.md: the description is used as the system prompt")
		return nil
	}
	data, err := c.read(name)
	if err != nil {
		return convError(t.file, key, "%v", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return convError(t.file, key, "%s is empty", name)
	}
	c.td.SystemPrompt = string(data)
	return nil
}

func (c *converter) initialState(t *mapping) error {
	is, err := t.sub("initial_state")
	if err != nil {
		return err
	}
	if acts, err := is.list("initialization_actions"); err != nil {
		return err
	} else if err := c.initActions(is, acts); err != nil {
		return err
	}
	if err := c.filesystem(is); err != nil {
		return err
	}
	// Upstream reads system_prompt from initial_state too; the task's own key
	// wins when both are set (systemPrompt reads this one as its fallback).
	if s, err := is.str("system_prompt"); err != nil {
		return err
	} else if s != "" {
		c.statePrompt = s
	}
	var data []byte
	src := "json_db"
	switch db := is.take("json_db"); {
	case db == nil:
	case db.Kind == yaml.ScalarNode:
		if data, err = c.read(db.Value); err != nil {
			return convError(is.file, is.at("json_db"), "%v", err)
		}
		src = c.file(db.Value)
	case db.Kind == yaml.MappingNode:
		// An inline database: the same tables a json_db file holds.
		if data, err = nodeJSON(db); err != nil {
			return convError(is.file, is.at("json_db"), "%v", err)
		}
		src = is.file + ": " + is.at("json_db")
	default:
		return convError(is.file, is.at("json_db"), "expected a file name or a mapping of tables, got %s", kindOf(db))
	}
	for _, k := range []string{"device_overrides", "mock_web", "rag"} {
		if is.has(k) {
			return convError(is.file, is.at(k), "cannot be honoured: the runner has no %s service; refused rather than run the task without it", k)
		}
		is.take(k)
	}
	is.leftovers(&c.rep, "the Go runner provisions tables (json_db), files (filesystem) and initialization actions")
	if data == nil {
		if len(c.files) > 0 {
			c.td.InitialState = &task.InitialState{Tables: map[string]json.RawMessage{}, Schemas: []task.TableSchema{}, UnstableFields: []task.UnstableField{}, Filesystem: c.files}
		}
		return nil
	}
	tables, schemas, err := c.tables(src, data)
	if err != nil {
		return err
	}
	c.out.Tables = tables
	var byName map[string]json.RawMessage
	if err := json.Unmarshal(tables, &byName); err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	if schemas == nil {
		schemas = []task.TableSchema{}
	}
	c.td.InitialState = &task.InitialState{Tables: byName, Schemas: schemas, UnstableFields: []task.UnstableField{}}
	if len(c.files) > 0 {
		c.td.InitialState.Filesystem = c.files
	}
	return nil
}

// agentVisible is the root of upstream's agent file system; our file tools
// work in the trial's directory, so paths under it become relative ones.
const agentVisible = "/env/fs/agent-visible/"

// agentPath maps an upstream agent-visible path onto the trial's directory.
func agentPath(p string) (string, bool) {
	p = strings.TrimPrefix(p, agentVisible)
	if p == "" || !filepath.IsLocal(filepath.FromSlash(p)) {
		return "", false
	}
	return path.Clean(p), true
}

// filesystem maps initial_state.filesystem (copy: [{from, to}], a pack file
// copied into the agent's file system) and workspace.files ([{path,
// content}]) onto InitialState.filesystem.
func (c *converter) filesystem(is *mapping) error {
	put := func(p, at, content string) error {
		rel, ok := agentPath(p)
		if !ok {
			return convError(is.file, at, "%q is outside the agent's file system (%s...): the runner writes initial files under the trial's directory only", p, agentVisible)
		}
		if c.files == nil {
			c.files = map[string]string{}
		}
		if _, dup := c.files[rel]; dup {
			return convError(is.file, at, "%q is written twice", p)
		}
		c.files[rel] = content
		return nil
	}
	if is.has("filesystem") {
		fsm, err := is.sub("filesystem")
		if err != nil {
			return err
		}
		copies, err := fsm.list("copy")
		if err != nil {
			return err
		}
		for i, n := range copies {
			at := fmt.Sprintf("%s[%d]", fsm.at("copy"), i)
			m, err := asMapping(is.file, at, n)
			if err != nil {
				return err
			}
			from, err := m.str("from")
			if err != nil {
				return err
			}
			to, err := m.str("to")
			if err != nil {
				return err
			}
			if from == "" || to == "" {
				return convError(is.file, at, "a copy needs from and to")
			}
			data, err := c.read(from)
			if err != nil {
				return convError(is.file, joinPath(at, "from"), "%v", err)
			}
			if err := put(to, joinPath(at, "to"), string(data)); err != nil {
				return err
			}
			m.leftovers(&c.rep, "a copy has from and to")
		}
		fsm.leftovers(&c.rep, "filesystem has copy")
	} else {
		is.take("filesystem")
	}
	if is.has("workspace") {
		ws, err := is.sub("workspace")
		if err != nil {
			return err
		}
		files, err := ws.list("files")
		if err != nil {
			return err
		}
		for i, n := range files {
			at := fmt.Sprintf("%s[%d]", ws.at("files"), i)
			m, err := asMapping(is.file, at, n)
			if err != nil {
				return err
			}
			p, err := m.str("path")
			if err != nil {
				return err
			}
			content, err := m.str("content")
			if err != nil {
				return err
			}
			if err := put(p, joinPath(at, "path"), content); err != nil {
				return err
			}
			m.leftovers(&c.rep, "a workspace file has path and content")
		}
		ws.leftovers(&c.rep, "workspace has files")
	} else {
		is.take("workspace")
	}
	return nil
}

// tables reads a json_db: an object of table name to a list of records. A
// tau-style dict of records ({"order_1": {"order_id": "order_1", ...}})
// becomes the list of its values in the dict's order, as Tolokaforge's loader
// makes it, each record with its dict key in the synthetic column
// task.DictKeyField, which becomes the table's primary key and is remembered
// (dictTables) so Python tools get the dict back. Number literals are kept as
// written.
func (c *converter) tables(file string, data []byte) (json.RawMessage, []task.TableSchema, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil || top == nil {
		return nil, nil, fmt.Errorf("%s: want a JSON object of tables: %v", file, errOr(err, "got null"))
	}
	keys, err := objectKeys(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	var b bytes.Buffer
	var schemas []task.TableSchema
	b.WriteByte('{')
	for i, name := range keys {
		if name == "" {
			return nil, nil, fmt.Errorf("%s: a table with an empty name", file)
		}
		rows, keyField, isDict, err := c.tableRows(file, name, top[name])
		if err != nil {
			return nil, nil, err
		}
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(&b, name)
		b.WriteByte(':')
		b.WriteByte('[')
		allIDs := true
		for j, r := range rows {
			if err := c.ctx.Err(); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", file, err)
			}
			if j > 0 {
				b.WriteByte(',')
			}
			if err := json.Compact(&b, r); err != nil {
				return nil, nil, fmt.Errorf("%s: %s[%d]: %w", file, name, j, err)
			}
			var rec map[string]json.RawMessage
			if err := json.Unmarshal(r, &rec); err != nil || rec == nil {
				return nil, nil, fmt.Errorf("%s: %s[%d]: want a JSON object (a record)", file, name, j)
			}
			if _, ok := rec["id"]; !ok {
				allIDs = false
			}
		}
		b.WriteByte(']')
		switch {
		case isDict:
			if c.dictTables == nil {
				c.dictTables = map[string]string{}
			}
			c.dictTables[name] = keyField
			schemas = append(schemas, task.TableSchema{TableName: name, PrimaryKey: keyField})
		case allIDs:
			schemas = append(schemas, task.TableSchema{TableName: name, PrimaryKey: task.DefaultPrimaryKey})
		}
	}
	b.WriteByte('}')
	return b.Bytes(), schemas, nil
}

// tableRows reads one table: a list of records, a dict of records keyed by id
// (isDict; each record gets its key in task.DictKeyField, the keyField), or a
// single record (a mapping whose values are not all records), which becomes a
// one-record table as upstream's loader makes it.
func (c *converter) tableRows(file, name string, raw json.RawMessage) (rows []json.RawMessage, keyField string, isDict bool, err error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) > 0 && raw[0] == '[':
		if err := json.Unmarshal(raw, &rows); err != nil {
			return nil, "", false, fmt.Errorf("%s: %s: %w", file, name, err)
		}
		return rows, "", false, nil
	case len(raw) > 0 && raw[0] == '{':
		keys, err := objectKeys(raw)
		if err != nil {
			return nil, "", false, fmt.Errorf("%s: %s: %w", file, name, err)
		}
		var byKey map[string]json.RawMessage
		if err := json.Unmarshal(raw, &byKey); err != nil {
			return nil, "", false, fmt.Errorf("%s: %s: %w", file, name, err)
		}
		recs := make([]map[string]json.RawMessage, 0, len(keys))
		for _, k := range keys {
			var rec map[string]json.RawMessage
			v := bytes.TrimSpace(byKey[k])
			if len(v) == 0 || v[0] != '{' || json.Unmarshal(v, &rec) != nil {
				recs = nil
				break
			}
			recs = append(recs, rec)
		}
		if recs == nil && len(keys) > 0 {
			c.rep.add(file, name, "a single record (its values are not all records): the table holds it as its one record, as Tolokaforge's loader does")
			return []json.RawMessage{raw}, "", false, nil
		}
		rows = make([]json.RawMessage, 0, len(keys))
		for i, k := range keys {
			if _, taken := recs[i][task.DictKeyField]; taken {
				return nil, "", false, fmt.Errorf("%s: %s[%q]: a record carries %s, the name of the synthetic key column the import keeps a dict table's keys in; rename that field", file, name, k, task.DictKeyField)
			}
			r, _ := task.WithDictKey(byKey[k], k)
			rows = append(rows, r)
		}
		// Every dict table keeps its keys in the synthetic column, even one whose
		// records carry the key in a field of their own (orders' order_id), which
		// stays as written: the column is how the DB service tells a dict (whose
		// hash ignores the records' order) from a list, and how every author-facing
		// view rebuilds the dict, one rule for all.
		return rows, task.DictKeyField, true, nil
	}
	return nil, "", false, fmt.Errorf("%s: %s: want a list of records or a dict of records, got %s: the DB service holds tables of records", file, name, describeJSON(raw))
}

func describeJSON(raw json.RawMessage) string {
	s := string(raw)
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}

// objectKeys lists a JSON object's keys in document order.
func objectKeys(data []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("want a JSON object")
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

func (c *converter) initActions(is *mapping, acts []*yaml.Node) error {
	for i, n := range acts {
		p := fmt.Sprintf("%s[%d]", is.at("initialization_actions"), i)
		m, err := asMapping(is.file, p, n)
		if err != nil {
			return err
		}
		a := task.InitializationAction{EnvType: task.EnvAssistant}
		// Tolokaforge's model says func_name and its adapter reads tool_name
		// (a known bug); either spelling names the tool here.
		for _, key := range []string{"tool_name", "func_name"} {
			if s, err := m.str(key); err != nil {
				return err
			} else if s != "" {
				a.ToolName = s
			}
		}
		if a.ToolName == "" {
			return convError(is.file, p, "names no tool (tool_name or func_name)")
		}
		if env, err := m.str("env_type"); err != nil {
			return err
		} else if env != "" {
			a.EnvType = task.EnvType(env)
		}
		if a.Arguments, err = m.object("arguments"); err != nil {
			return err
		}
		m.leftovers(&c.rep, "an initialization action has env_type, tool_name and arguments")
		c.td.InitializationActions = append(c.td.InitializationActions, a)
	}
	return nil
}

// toolSource reads a tool's explicit implementation (tools.json's source:
// {toolset, module_path, class_name, invocation_style}) and ships the
// module's package: a Python class runs in the runner's Python host, which
// imports module_path from the task's artifacts.
func (c *converter) toolSource(tool *mapping) (*task.ToolSource, error) {
	m, err := tool.sub("source")
	if err != nil {
		return nil, err
	}
	src := &task.ToolSource{}
	for _, f := range []struct {
		key string
		dst *string
	}{{"toolset", &src.Toolset}, {"module_path", &src.ModulePath}, {"class_name", &src.ClassName}} {
		if *f.dst, err = m.str(f.key); err != nil {
			return nil, err
		}
	}
	style, err := m.str("invocation_style")
	if err != nil {
		return nil, err
	}
	if script, err := m.str("mcp_server_script"); err != nil {
		return nil, err
	} else if script != "" {
		art, err := c.artifact(script)
		if err != nil {
			return nil, convError(m.file, m.at("mcp_server_script"), "%v", err)
		}
		src.MCPServerScript = &art
	}
	if extra, err := m.object("extra"); err != nil {
		return nil, err
	} else if extra != nil {
		if err := json.Unmarshal(extra, &src.Extra); err != nil {
			return nil, convError(m.file, m.at("extra"), "%v", err)
		}
	}
	m.leftovers(&c.rep, "a tool source has toolset, module_path, class_name, invocation_style, mcp_server_script and extra")
	switch style {
	case "", string(task.InvocationTauSync), "mcp_async":
		src.InvocationStyle = task.InvocationTauSync
		if style != "" {
			src.InvocationStyle = task.ToolSource{}.InvocationStyle
			_ = json.Unmarshal([]byte(strconv.Quote(style)), &src.InvocationStyle)
		}
		if src.ModulePath == "" || src.ClassName == "" {
			return nil, convError(m.file, m.path, "a %s tool needs module_path and class_name", orDefault(style, "tau_sync"))
		}
		if err := c.shipModule(src.ModulePath); err != nil {
			return nil, convError(m.file, m.at("module_path"), "%v", err)
		}
	case string(task.InvocationMCPServer):
		src.InvocationStyle = task.InvocationMCPServer
		if src.MCPServerScript != nil {
			if err := c.shipScript(m, *src.MCPServerScript); err != nil {
				return nil, err
			}
		}
	default:
		return nil, convError(m.file, m.at("invocation_style"), "%q cannot be honoured: the runner runs tau_sync, mcp_async and mcp_server tools", style)
	}
	return src, nil
}

// shipModule ships a Python module and its package: "tau_tools.x" ships
// every .py under tau_tools/ (its siblings and subpackages are what it
// imports), a top-level "x" ships x.py.
func (c *converter) shipModule(module string) error {
	parts := strings.Split(module, ".")
	for _, p := range parts {
		if p == "" || !filepath.IsLocal(p) {
			return fmt.Errorf("%q is not a Python module path", module)
		}
	}
	file := strings.Join(parts, "/") + ".py"
	if ok, err := c.exists(c.fromRoot(file)); err != nil {
		return err
	} else if !ok {
		if ok, _ := c.exists(c.fromRoot(strings.Join(parts, "/") + "/__init__.py")); !ok {
			return fmt.Errorf("module %s: neither %s nor its package is in the pack", module, file)
		}
	}
	if len(parts) == 1 {
		return c.ship(file)
	}
	return c.shipPyTree(parts[0], true)
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func (c *converter) toolList() (map[string]task.ToolSchema, string, error) {
	for _, name := range []string{"fixtures/tools.json", "tools.json"} {
		if ok, err := c.exists(name); err != nil {
			return nil, "", err
		} else if !ok {
			continue
		}
		data, err := c.read(name)
		if err != nil {
			return nil, "", err
		}
		doc, err := c.parse(name, data) // JSON is YAML: one reader, one way to report keys
		if err != nil {
			return nil, "", err
		}
		if doc == nil || doc.Kind != yaml.SequenceNode {
			return nil, "", fmt.Errorf("%s: want a JSON list of tool schemas", c.file(name))
		}
		out := map[string]task.ToolSchema{}
		for i, n := range doc.Content {
			m, err := asMapping(c.file(name), fmt.Sprintf("[%d]", i), n)
			if err != nil {
				return nil, "", err
			}
			var s task.ToolSchema
			if s.Name, err = m.str("name"); err != nil {
				return nil, "", err
			}
			if s.Name == "" {
				return nil, "", convError(m.file, m.path, "a tool needs a name")
			}
			if s.Description, err = m.str("description"); err != nil {
				return nil, "", err
			}
			if s.Parameters, err = m.object("parameters"); err != nil {
				return nil, "", err
			}
			cat, err := m.str("category")
			if err != nil {
				return nil, "", err
			}
			s.Category = task.ToolCategory(cat)
			if to, err := m.number("timeout_s"); err != nil {
				return nil, "", err
			} else if to != nil {
				s.TimeoutS = *to
			}
			if m.has("source") {
				if s.Source, err = c.toolSource(m); err != nil {
					return nil, "", err
				}
			} else {
				m.take("source")
			}
			m.leftovers(&c.rep, "a tool schema has name, description, parameters, category, timeout_s and source")
			if _, dup := out[s.Name]; dup {
				return nil, "", convError(m.file, m.at("name"), "duplicate tool %q", s.Name)
			}
			out[s.Name] = s
		}
		return out, name, nil
	}
	return map[string]task.ToolSchema{}, "", nil
}

// scriptedFiller is what the runner's scripted user says while a line waits
// for its if_assistant_contains (controllers/host's scripted user).
const scriptedFiller = "Please continue."

// unhonoured are upstream tools the runner has no way to provide: refused by
// name, never offered to the agent as a tool that cannot run.
var unhonoured = map[string]string{
	"browser": "the runner has no browser",
}

func (c *converter) tools(t *mapping) error {
	schemas, listFile, err := c.toolList()
	if err != nil {
		return err
	}
	tools, err := t.sub("tools")
	if err != nil {
		return err
	}
	for _, actor := range []string{"agent", "user"} {
		m, err := tools.sub(actor)
		if err != nil {
			return err
		}
		enabled, err := m.strings("enabled")
		if err != nil {
			return err
		}
		script, err := m.str("mcp_server")
		if err != nil {
			return err
		}
		var src *mcpSource
		if script != "" {
			art, err := c.artifact(script)
			if err != nil {
				// A script outside the pack is fine when --mcp-command maps
				// it: nothing of it is read or shipped.
				if _, mapped := c.opts.MCPCommands[path.Base(filepath.ToSlash(script))]; !mapped {
					if _, mapped = c.opts.MCPCommands[script]; !mapped {
						return convError(m.file, m.at("mcp_server"), "%v", err)
					}
				}
				art = script
			}
			s := resolveMCP(art, enabled, c.opts.MCPCommands)
			if s.note != "" {
				c.rep.add(m.file, m.at("mcp_server"), "%s", s.note)
				if err := c.shipScript(m, art); err != nil {
					return err
				}
			}
			src = &s
		}
		out := []task.ToolSchema{}
		placeholders := 0
		for i, name := range enabled {
			p := fmt.Sprintf("%s[%d]", m.at("enabled"), i)
			if why, ok := unhonoured[name]; ok {
				if _, listed := schemas[name]; !listed || src == nil {
					return convError(m.file, p, "tool %q cannot be honoured: %s; refused rather than offer the agent a tool that cannot run", name, why)
				}
			}
			s, listed := schemas[name]
			switch {
			case listed && s.Source != nil:
				// tools.json named the tool's implementation itself.
			case listed && src != nil:
				s.Source = src.source(name)
			case src != nil && src.script != "":
				// Upstream asks the script for its schemas (tools/list); the
				// import cannot run it, so the tool is offered with upstream's
				// own fallback schema.
				s = task.ToolSchema{Name: name, Description: "Agent tool: " + name, Parameters: json.RawMessage(`{"type":"object","properties":{}}`), Category: task.CategoryCompute, Source: src.source(name)}
				placeholders++
			case listed:
				if _, ok := c.opts.Builtins.Lookup(name); !ok {
					return convError(m.file, p, "tool %q has a schema in %s but no implementation: it is no builtin and tools.%s.mcp_server is not set", name, listFile, actor)
				}
			default:
				b, ok := c.opts.Builtins.Lookup(name)
				if !ok {
					where := "the pack has no tool list (fixtures/tools.json)"
					if listFile != "" {
						where = "it is not in " + listFile
					}
					return convError(m.file, p, "tool %q has no implementation: %s, tools.%s.mcp_server is not set, and it is not a builtin (%s)", name, where, actor, strings.Join(c.opts.Builtins.Names(), ", "))
				}
				s = b
			}
			if s.TimeoutS == 0 {
				s.TimeoutS = task.DefaultToolTimeoutS
			}
			if isPython(s.Source) {
				if s.Source.Extra == nil {
					s.Source.Extra = map[string]json.RawMessage{}
				}
				s.Source.Extra["dict_tables"] = c.dictTablesJSON()
			}
			out = append(out, s)
		}
		if placeholders > 0 {
			fallback, err := c.describe(m, src, out)
			if err != nil {
				return err
			}
			if len(fallback) > 0 {
				c.rep.add(m.file, m.at("enabled"), "%d tool(s) have no schema in fixtures/tools.json and give none themselves (%s): offered with upstream's fallback schema (description \"Agent tool: NAME\", no parameters); write fixtures/tools.json to give the agent real ones", len(fallback), strings.Join(fallback, ", "))
			}
		}
		m.leftovers(&c.rep, "tools take enabled and mcp_server")
		if actor == "agent" {
			c.td.AgentTools = out
		} else {
			c.td.UserTools = out
		}
	}
	tools.leftovers(&c.rep, "tools has agent and user")
	return nil
}

// isPython says the tool runs in the runner's Python host: tau_sync and
// mcp_async classes, and an mcp_server whose script is a .py file.
func isPython(s *task.ToolSource) bool {
	if s == nil {
		return false
	}
	switch s.InvocationStyle {
	case task.InvocationTauSync, "mcp_async", "":
		return true
	case task.InvocationMCPServer:
		return s.MCPServerScript != nil && strings.HasSuffix(*s.MCPServerScript, ".py")
	}
	return false
}

// dictTablesJSON is extra.dict_tables: every json_db table written as a dict
// of records, with the field that carries its key, so the Python host hands
// tools the dict they index by key.
func (c *converter) dictTablesJSON() json.RawMessage {
	m := c.dictTables
	if m == nil {
		m = map[string]string{}
	}
	raw, _ := json.Marshal(m) // a map of strings always marshals
	return raw
}

// shipScript carries an MCP server script in tool_artifacts and, for a .py
// script, every .py file under its folder: the modules it imports (a
// project's tau_tools/ package, helpers beside it). Only .py files travel:
// data files a script would load itself (upstream's mcp_server.py reads
// data/*.json when present) are the DB service's business, and shipping them
// would let the script start from the files instead of the trial's tables.
func (c *converter) shipScript(m *mapping, art string) error {
	ok, err := c.exists(c.fromRoot(art))
	if err != nil {
		return convError(m.file, m.at("mcp_server"), "%v", err)
	}
	if !ok {
		return convError(m.file, m.at("mcp_server"), "%s: no such file in the pack", art)
	}
	if err := c.ship(art); err != nil {
		return convError(m.file, m.at("mcp_server"), "%v", err)
	}
	if !strings.HasSuffix(art, ".py") {
		return nil
	}
	if err := c.shipPyTree(path.Dir(art), true); err != nil {
		return convError(m.file, m.at("mcp_server"), "%v", err)
	}
	return nil
}

// fromRoot turns a root-relative artifact path into a name relative to the
// task directory, for read and exists.
func (c *converter) fromRoot(art string) string {
	if c.taskRel == "" {
		return art
	}
	up := strings.Repeat("../", strings.Count(c.taskRel, "/")+1)
	return up + art
}

// ship adds one root-relative file to tool_artifacts.
func (c *converter) ship(art string) error {
	if _, done := c.td.ToolArtifacts[art]; done {
		return nil
	}
	data, err := c.read(c.fromRoot(art))
	if err != nil {
		return err
	}
	if c.td.ToolArtifacts == nil {
		c.td.ToolArtifacts = map[string]string{}
	}
	c.td.ToolArtifacts[art] = base64.StdEncoding.EncodeToString(data)
	return nil
}

// shipPyTree ships the .py files of a root-relative folder; recursive walks
// its subfolders too, skipping tasks/ (other tasks' files), hidden folders
// and __pycache__.
func (c *converter) shipPyTree(dir string, recursive bool) error {
	if err := c.ctx.Err(); err != nil {
		return err
	}
	ents, err := c.root.ReadDir(filepath.FromSlash(dir))
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	for _, e := range ents {
		name := e.Name()
		rel := path.Join(dir, name)
		if dir == "." {
			rel = name
		}
		switch {
		case strings.HasPrefix(name, "."):
		case e.IsDir():
			if recursive && name != "__pycache__" && name != "tasks" {
				if err := c.shipPyTree(rel, true); err != nil {
					return err
				}
			}
		case strings.HasSuffix(name, ".py"):
			if err := c.ship(rel); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *converter) userSimulator(t *mapping) error {
	if !t.has("user_simulator") {
		t.take("user_simulator")
		return nil
	}
	m, err := t.sub("user_simulator")
	if err != nil {
		return err
	}
	u := &task.UserSimulatorConfig{}
	mode, err := m.str("mode")
	if err != nil {
		return err
	}
	u.Mode = task.UserSimMode(mode)
	if u.Persona, err = m.str("persona"); err != nil {
		return err
	}
	if u.Backstory, err = m.str("backstory"); err != nil {
		return err
	}
	flow, err := m.list("scripted_flow")
	if err != nil {
		return err
	}
	for i, n := range flow {
		p := fmt.Sprintf("%s[%d]", m.at("scripted_flow"), i)
		line, err := asMapping(m.file, p, n)
		if err != nil {
			return err
		}
		role, err := line.str("role")
		if err != nil {
			return err
		}
		if role != "" && role != "user" {
			return convError(m.file, joinPath(p, "role"), "%q: a scripted flow holds the user's lines only", role)
		}
		var sl task.ScriptedLine
		// {role: user, content: ...} and upstream's own {user: ...} (message
		// is accepted too).
		for _, key := range []string{"content", "message", "user"} {
			if s, err := line.str(key); err != nil {
				return err
			} else if s != "" {
				if sl.Message != "" {
					return convError(m.file, joinPath(p, key), "a second text for one line (content, message and user are one key)")
				}
				sl.Message = s
			}
		}
		if sl.IfAssistantContains, err = line.str("if_assistant_contains"); err != nil {
			return err
		}
		def, err := line.str("default")
		if err != nil {
			return err
		}
		if def != "" {
			// Upstream's default is what the user says while a conditional
			// line waits; ours is fixed.
			if def != scriptedFiller {
				c.rep.add(m.file, joinPath(p, "default"), "the runner's scripted user says %q while a line waits for its if_assistant_contains, not %q", scriptedFiller, def)
			}
			if sl.Message == "" {
				line.leftovers(&c.rep, "a scripted line has role, content (or user), if_assistant_contains and default")
				continue
			}
		}
		if sl.Message == "" {
			return convError(m.file, p, "a scripted line needs content (or user)")
		}
		line.leftovers(&c.rep, "a scripted line has role, content (or user), if_assistant_contains and default")
		u.ScriptedFlow = append(u.ScriptedFlow, sl)
	}
	m.leftovers(&c.rep, "the user simulator takes mode, persona, backstory and scripted_flow; protocol v2 dropped first_message and user_context")
	c.td.UserSimulator = u
	return nil
}

// metadata keeps task.yaml's metadata, and its policies (which the runner
// has no place for) under metadata.policies so they are not lost.
func (c *converter) metadata(t *mapping) error {
	md := map[string]json.RawMessage{}
	if raw, err := t.object("metadata"); err != nil {
		return err
	} else if raw != nil {
		if err := json.Unmarshal(raw, &md); err != nil {
			return convError(t.file, "metadata", "%v", err)
		}
	}
	if pol := t.vals["policies"]; !isEmpty(pol) {
		raw, err := t.raw("policies")
		if err != nil {
			return err
		}
		md["policies"] = raw
		c.rep.add(t.file, "policies", "kept as metadata.policies only: the runner does not show policies to the agent; put them in the system prompt to enforce them")
	} else {
		t.take("policies")
	}
	if len(md) > 0 {
		c.td.Metadata = md
	}
	return nil
}

func errOr(err error, fallback string) string {
	if err != nil {
		return err.Error()
	}
	return fallback
}
