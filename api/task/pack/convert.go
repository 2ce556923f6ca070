package pack

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
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
	root *rootfs.Root // dir: every read goes through it
	name string       // dir's base name, prefixing file names in diagnostics
	opts Options
	rep  report
	td   task.TaskDescription
	out  converted
}

func (c *converter) file(name string) string { return filepath.Join(c.name, name) }

// Convert reads one native task directory.
func Convert(dir string, opts Options) (*converted, error) {
	return ConvertContext(context.Background(), dir, opts)
}

// ConvertContext is Convert ending early, with ctx's error, once ctx is done
// (the CLI's context is canceled by SIGTERM and ^C).
//
// Files are read below dir only: a symbolic link is followed while it stays
// inside the task directory and refused, naming the link and its target,
// when it leaves it; files over MaxFileBytes and anything but regular files
// are refused too. Every YAML file is refused past the alias budget
// (MaxAliasNodes, MaxAliasDepth).
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
	root, err := rootfs.Open(abs)
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", dir, err)
	}
	defer root.Close()
	c := &converter{ctx: ctx, dir: abs, root: root, name: filepath.Base(abs), opts: opts}
	c.out.Dir = dir
	if err := c.convert(); err != nil {
		return nil, err
	}
	c.out.Diagnostics = c.rep.diags
	return &c.out, nil
}

// local is name (slash-separated, relative to the task directory) as a
// path below it, or an error when it climbs out or is absolute.
func (c *converter) local(name string) (string, error) {
	p := filepath.FromSlash(name)
	if !filepath.IsLocal(p) {
		return "", fmt.Errorf("%s: %q leaves the task directory", c.name, name)
	}
	return p, nil
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
	if err := c.systemPrompt(t); err != nil {
		return err
	}
	if err := c.initialState(t); err != nil {
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

func (c *converter) systemPrompt(t *mapping) error {
	name, err := t.str("system_prompt")
	if err != nil {
		return err
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
		return convError(t.file, "system_prompt", "%v", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return convError(t.file, "system_prompt", "%s is empty", name)
	}
	c.td.SystemPrompt = string(data)
	return nil
}

func (c *converter) initialState(t *mapping) error {
	is, err := t.sub("initial_state")
	if err != nil {
		return err
	}
	db, err := is.str("json_db")
	if err != nil {
		return err
	}
	if acts, err := is.list("initialization_actions"); err != nil {
		return err
	} else if err := c.initActions(is, acts); err != nil {
		return err
	}
	is.leftovers(&c.rep, "the Go runner provisions only tables (json_db) and initialization actions")
	if db == "" {
		return nil
	}
	data, err := c.read(db)
	if err != nil {
		return convError(is.file, is.at("json_db"), "%v", err)
	}
	tables, schemas, err := c.tables(db, data)
	if err != nil {
		return err
	}
	c.out.Tables = tables
	var byName map[string]json.RawMessage
	if err := json.Unmarshal(tables, &byName); err != nil {
		return fmt.Errorf("%s: %w", c.file(db), err)
	}
	c.td.InitialState = &task.InitialState{Tables: byName, Schemas: schemas, UnstableFields: []task.UnstableField{}}
	return nil
}

// tables reads a json_db file: an object of table name to a list of records
// (a tau-style dict of records becomes the list of its values, as
// Tolokaforge's loader makes it). Number literals are kept as written.
func (c *converter) tables(file string, data []byte) (json.RawMessage, []task.TableSchema, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil || top == nil {
		return nil, nil, fmt.Errorf("%s: want a JSON object of tables: %v", c.file(file), errOr(err, "got null"))
	}
	keys, err := objectKeys(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", c.file(file), err)
	}
	var b bytes.Buffer
	var schemas []task.TableSchema
	b.WriteByte('{')
	for i, name := range keys {
		rows, err := c.tableRows(file, name, top[name])
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
				return nil, nil, fmt.Errorf("%s: %w", c.file(file), err)
			}
			if j > 0 {
				b.WriteByte(',')
			}
			if err := json.Compact(&b, r); err != nil {
				return nil, nil, fmt.Errorf("%s: %s[%d]: %w", c.file(file), name, j, err)
			}
			var rec map[string]json.RawMessage
			if err := json.Unmarshal(r, &rec); err != nil || rec == nil {
				return nil, nil, fmt.Errorf("%s: %s[%d]: want a JSON object (a record)", c.file(file), name, j)
			}
			if _, ok := rec["id"]; !ok {
				allIDs = false
			}
		}
		b.WriteByte(']')
		if allIDs {
			schemas = append(schemas, task.TableSchema{TableName: name, PrimaryKey: task.DefaultPrimaryKey})
		}
	}
	b.WriteByte('}')
	return b.Bytes(), schemas, nil
}

func (c *converter) tableRows(file, name string, raw json.RawMessage) ([]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) > 0 && raw[0] == '[':
		var rows []json.RawMessage
		if err := json.Unmarshal(raw, &rows); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", c.file(file), name, err)
		}
		return rows, nil
	case len(raw) > 0 && raw[0] == '{':
		keys, err := objectKeys(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", c.file(file), name, err)
		}
		var byKey map[string]json.RawMessage
		if err := json.Unmarshal(raw, &byKey); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", c.file(file), name, err)
		}
		rows := make([]json.RawMessage, 0, len(keys))
		for _, k := range keys {
			rows = append(rows, byKey[k])
		}
		c.rep.add(c.file(file), name, "a dict of %d records keyed by id: the records become the table's list and the keys are dropped (as Tolokaforge's native loader does); keep the id inside each record", len(keys))
		return rows, nil
	}
	return nil, fmt.Errorf("%s: %s: want a list of records", c.file(file), name)
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
			m.leftovers(&c.rep, "a tool schema has name, description, parameters, category and timeout_s")
			if _, dup := out[s.Name]; dup {
				return nil, "", convError(m.file, m.at("name"), "duplicate tool %q", s.Name)
			}
			out[s.Name] = s
		}
		return out, name, nil
	}
	return map[string]task.ToolSchema{}, "", nil
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
			s := resolveMCP(script, enabled, c.opts.MCPCommands)
			if s.note != "" {
				c.rep.add(m.file, m.at("mcp_server"), "%s", s.note)
				// Shipped when the pack holds it. A script named by a path
				// out of the pack is not the pack's to ship (the note says
				// how to run it); a link out of the pack is refused, never
				// read.
				if filepath.IsLocal(filepath.FromSlash(script)) {
					ok, err := c.exists(script)
					if err != nil {
						return convError(m.file, m.at("mcp_server"), "%v", err)
					}
					if ok {
						data, err := c.read(script)
						if err != nil {
							return convError(m.file, m.at("mcp_server"), "%v", err)
						}
						if c.td.ToolArtifacts == nil {
							c.td.ToolArtifacts = map[string]string{}
						}
						c.td.ToolArtifacts[filepath.ToSlash(script)] = base64.StdEncoding.EncodeToString(data)
					}
				}
			}
			src = &s
		}
		out := []task.ToolSchema{}
		for i, name := range enabled {
			p := fmt.Sprintf("%s[%d]", m.at("enabled"), i)
			s, listed := schemas[name]
			switch {
			case listed && src != nil:
				s.Source = src.source(name)
			case listed:
				if _, ok := c.opts.Builtins.Lookup(name); !ok {
					return convError(m.file, p, "tool %q has a schema in %s but no implementation: it is no builtin and tools.%s.mcp_server is not set", name, listFile, actor)
				}
			default:
				b, ok := c.opts.Builtins.Lookup(name)
				if !ok {
					where := "no tool list (fixtures/tools.json)"
					if listFile != "" {
						where = listFile
					}
					return convError(m.file, p, "tool %q is neither in %s nor a builtin (%s)", name, where, strings.Join(c.opts.Builtins.Names(), ", "))
				}
				s = b
			}
			if s.TimeoutS == 0 {
				s.TimeoutS = task.DefaultToolTimeoutS
			}
			out = append(out, s)
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
		for _, key := range []string{"content", "message"} {
			if s, err := line.str(key); err != nil {
				return err
			} else if s != "" {
				sl.Message = s
			}
		}
		if sl.Message == "" {
			return convError(m.file, p, "a scripted line needs content")
		}
		if sl.IfAssistantContains, err = line.str("if_assistant_contains"); err != nil {
			return err
		}
		line.leftovers(&c.rep, "a scripted line has role, content and if_assistant_contains")
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
