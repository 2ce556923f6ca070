package builtin

import (
	"context"
	"encoding/json"
	"sort"

	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/dbservice/client"
	"tolokaforge.io/operator/runner/tools"
)

// store is the trial's tables as the DB tools see them. The runner implements
// it over the DB service client so it can count the versions a call produced.
type store interface {
	// Table returns one table as a JSON array of records. A table the trial
	// does not hold is an error wrapping client.ErrTableNotFound.
	Table(ctx context.Context, name string) (json.RawMessage, error)
	// Patch applies operations to one table atomically and returns the number
	// of records they affected.
	Patch(ctx context.Context, table string, ops []client.Operation) (affected int, err error)
}

// Env is what a builtin tool of one trial may touch.
type Env struct {
	// store is the trial's DB; the DB tools fail cleanly when it is nil.
	Store store
	// Root is the trial's file-tool directory (absolute).
	Root string
}

// Builtin describes one builtin tool.
type Builtin struct {
	Name        string
	Description string
	// Parameters is the tool's JSON Schema, advertised when the task gives none.
	Parameters json.RawMessage
	Category   task.ToolCategory
	New        func(Env) tools.Tool
	// Cooperative says the tool returns promptly once its context ends, so
	// the runner may run it on the calling goroutine (tools.Entry.Inline).
	// Every catalog tool is; an extra builtin must opt in.
	Cooperative bool
}

var catalog = map[string]Builtin{}

func register(b Builtin) {
	b.Cooperative = true
	if _, dup := catalog[b.Name]; dup {
		panic("builtin: duplicate tool " + b.Name) // init-time programming error
	}
	catalog[b.Name] = b
}

// Lookup returns the builtin named name.
func Lookup(name string) (Builtin, bool) {
	b, ok := catalog[name]
	return b, ok
}

// Catalog is the builtin catalog as task-pack conversion reads it
// (pack.Builtins): which tools a pack may enable without a server.
type Catalog struct{}

// Lookup returns the advertised schema of the builtin name.
func (Catalog) Lookup(name string) (task.ToolSchema, bool) {
	b, ok := catalog[name]
	if !ok {
		return task.ToolSchema{}, false
	}
	return task.ToolSchema{Name: name, Description: b.Description, Category: b.Category}, true
}

// Names lists every builtin tool, sorted.
func (Catalog) Names() []string { return Names() }

// Names lists every builtin tool, sorted.
func Names() []string {
	names := make([]string, 0, len(catalog))
	for n := range catalog {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// toolFunc adapts a function to tools.Tool.
type toolFunc func(ctx context.Context, args json.RawMessage) (string, error)

func (f toolFunc) Call(ctx context.Context, args json.RawMessage) (string, error) {
	return f(ctx, args)
}
