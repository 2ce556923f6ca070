package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"tolokaforge.io/operator/api/canonical"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/dbservice/client"
	"tolokaforge.io/operator/runner/tools"
)

// errNoStore is what a DB tool answers in a trial the runner gave no DB.
var errNoStore = errors.New("no DB service is configured for this trial")

const tableProp = `"table":{"type":"string","minLength":1,"description":"Name of the table."}`

func init() {
	register(Builtin{
		Name:        "db_get",
		Description: "Return the record of a table whose key field equals the given key.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` + tableProp + `,` +
			`"key":{"type":["string","integer"],"description":"Key value to look up."},` +
			`"key_field":{"type":"string","minLength":1,"default":"id","description":"Field holding the key (default id)."}},` +
			`"required":["table","key"],"additionalProperties":false}`),
		Category: task.CategoryRead,
		New:      func(env Env) tools.Tool { return toolFunc(env.dbGet) },
	})
	register(Builtin{
		Name:        "db_find",
		Description: "Return the records of a table whose fields equal every field of the filter ({} matches all).",
		Parameters: json.RawMessage(`{"type":"object","properties":{` + tableProp + `,` +
			`"filter":{"type":"object","description":"Field values a record must equal; {} matches every record."},` +
			`"limit":{"type":"integer","minimum":1,"description":"Return at most this many records."}},` +
			`"required":["table"],"additionalProperties":false}`),
		Category: task.CategoryRead,
		New:      func(env Env) tools.Tool { return toolFunc(env.dbFind) },
	})
	register(Builtin{
		Name:        "db_insert",
		Description: "Insert one record into a table.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` + tableProp + `,` +
			`"record":{"type":"object","description":"The record to insert."}},` +
			`"required":["table","record"],"additionalProperties":false}`),
		Category: task.CategoryWrite,
		New:      func(env Env) tools.Tool { return toolFunc(env.dbInsert) },
	})
	register(Builtin{
		Name:        "db_update",
		Description: "Set fields on every record of a table matching the filter.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` + tableProp + `,` +
			`"filter":{"type":"object","minProperties":1,"description":"Field values a record must equal."},` +
			`"set":{"type":"object","minProperties":1,"description":"Fields to set on each matching record."}},` +
			`"required":["table","filter","set"],"additionalProperties":false}`),
		Category: task.CategoryWrite,
		New:      func(env Env) tools.Tool { return toolFunc(env.dbUpdate) },
	})
	register(Builtin{
		Name:        "db_delete",
		Description: "Delete every record of a table matching the filter.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` + tableProp + `,` +
			`"filter":{"type":"object","minProperties":1,"description":"Field values a record must equal."}},` +
			`"required":["table","filter"],"additionalProperties":false}`),
		Category: task.CategoryWrite,
		New:      func(env Env) tools.Tool { return toolFunc(env.dbDelete) },
	})
}

type getArgs struct {
	Table    string          `json:"table"`
	Key      json.RawMessage `json:"key"`
	KeyField string          `json:"key_field"`
}

func (env Env) dbGet(ctx context.Context, raw json.RawMessage) (string, error) {
	var a getArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	if err := required("table", a.Table); err != nil {
		return "", err
	}
	if len(a.Key) == 0 {
		return "", &tools.ArgumentError{Path: "arguments.key", Msg: "required"}
	}
	if a.KeyField == "" {
		a.KeyField = task.DefaultPrimaryKey
	}
	key, err := canonical.Parse(a.Key)
	if err != nil {
		return "", &tools.ArgumentError{Path: "arguments.key", Msg: err.Error()}
	}
	rows, err := env.rows(ctx, a.Table)
	if err != nil {
		return "", err
	}
	filter := canonical.NewObject(canonical.Member{Key: a.KeyField, Value: key})
	for _, r := range rows {
		if matches(r, filter) {
			return string(canonical.Marshal(r)), nil
		}
	}
	return "", fmt.Errorf("no record with %s=%s in table %q", a.KeyField, canonical.Marshal(key), a.Table)
}

type findArgs struct {
	Table  string          `json:"table"`
	Filter json.RawMessage `json:"filter"`
	Limit  *int            `json:"limit"`
}

func (env Env) dbFind(ctx context.Context, raw json.RawMessage) (string, error) {
	var a findArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	if err := required("table", a.Table); err != nil {
		return "", err
	}
	filter, err := objectArg("filter", a.Filter, false)
	if err != nil {
		return "", err
	}
	if a.Limit != nil && *a.Limit < 1 {
		return "", &tools.ArgumentError{Path: "arguments.limit", Msg: strconv.Itoa(*a.Limit) + " must be >= 1"}
	}
	rows, err := env.rows(ctx, a.Table)
	if err != nil {
		return "", err
	}
	out := canonical.Array{}
	for _, r := range rows {
		if a.Limit != nil && len(out) == *a.Limit {
			break
		}
		if matches(r, filter) {
			out = append(out, r)
		}
	}
	return string(canonical.Marshal(out)), nil
}

type insertArgs struct {
	Table  string          `json:"table"`
	Record json.RawMessage `json:"record"`
}

func (env Env) dbInsert(ctx context.Context, raw json.RawMessage) (string, error) {
	var a insertArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	if err := required("table", a.Table); err != nil {
		return "", err
	}
	rec, err := objectArg("record", a.Record, true)
	if err != nil {
		return "", err
	}
	enc := canonical.Marshal(rec)
	if _, err := env.patch(ctx, a.Table, client.Operation{Op: "insert", Record: enc}); err != nil {
		return "", err
	}
	return string(enc), nil
}

type updateArgs struct {
	Table  string          `json:"table"`
	Filter json.RawMessage `json:"filter"`
	Set    json.RawMessage `json:"set"`
}

func (env Env) dbUpdate(ctx context.Context, raw json.RawMessage) (string, error) {
	var a updateArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	if err := required("table", a.Table); err != nil {
		return "", err
	}
	filter, err := nonEmptyObjectArg("filter", a.Filter)
	if err != nil {
		return "", err
	}
	set, err := nonEmptyObjectArg("set", a.Set)
	if err != nil {
		return "", err
	}
	n, err := env.patch(ctx, a.Table, client.Operation{Op: "update", Filter: canonical.Marshal(filter), Set: canonical.Marshal(set)})
	if err != nil {
		return "", err
	}
	return `{"updated":` + strconv.Itoa(n) + `}`, nil
}

type deleteArgs struct {
	Table  string          `json:"table"`
	Filter json.RawMessage `json:"filter"`
}

func (env Env) dbDelete(ctx context.Context, raw json.RawMessage) (string, error) {
	var a deleteArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	if err := required("table", a.Table); err != nil {
		return "", err
	}
	filter, err := nonEmptyObjectArg("filter", a.Filter)
	if err != nil {
		return "", err
	}
	n, err := env.patch(ctx, a.Table, client.Operation{Op: "delete", Filter: canonical.Marshal(filter)})
	if err != nil {
		return "", err
	}
	return `{"deleted":` + strconv.Itoa(n) + `}`, nil
}

func (env Env) rows(ctx context.Context, table string) ([]canonical.Object, error) {
	if env.Store == nil {
		return nil, errNoStore
	}
	raw, err := env.Store.Table(ctx, table)
	if err != nil {
		if errors.Is(err, client.ErrTableNotFound) {
			return nil, fmt.Errorf("table %q not found", table)
		}
		return nil, fmt.Errorf("read table %q: %w", table, err)
	}
	v, err := canonical.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("read table %q: %w", table, err)
	}
	arr, ok := v.(canonical.Array)
	if !ok {
		return nil, fmt.Errorf("read table %q: not an array", table)
	}
	rows := make([]canonical.Object, 0, len(arr))
	for _, e := range arr {
		if o, ok := e.(canonical.Object); ok {
			rows = append(rows, o)
		}
	}
	return rows, nil
}

func (env Env) patch(ctx context.Context, table string, op client.Operation) (int, error) {
	if env.Store == nil {
		return 0, errNoStore
	}
	n, err := env.Store.Patch(ctx, table, []client.Operation{op})
	if errors.Is(err, client.ErrTrialNotFound) {
		// The DB service lost the trial (it restarted empty): the runner's
		// fault to report (tools.Outcome.Infra), not a sentence for the agent.
		return 0, fmt.Errorf("%s on table %q: %w", op.Op, table, err)
	}
	var api *client.APIError
	if errors.As(err, &api) && api.StatusCode < 500 {
		// The service's own sentence is what the agent can act on; the
		// operation index and transport details are ours.
		return 0, fmt.Errorf("%s on table %q: %s", op.Op, table, opIndex.ReplaceAllString(api.Message, ""))
	}
	if err != nil {
		return 0, fmt.Errorf("%s on table %q: %w", op.Op, table, err)
	}
	return n, nil
}

var opIndex = regexp.MustCompile(`^operations\[\d+\]: `)

// matches is the DB service's filter rule: every filter field equals the
// record's (canonical.Equal), a missing field reading as null.
func matches(rec, filter canonical.Object) bool {
	for k, want := range filter.All() {
		got, ok := rec.Get(k)
		if !ok {
			got = canonical.Null{}
		}
		if !canonical.Equal(got, want) {
			return false
		}
	}
	return true
}

func objectArg(name string, raw json.RawMessage, req bool) (canonical.Object, error) {
	if len(raw) == 0 || string(raw) == "null" {
		if req {
			return canonical.Object{}, &tools.ArgumentError{Path: "arguments." + name, Msg: "required, must be an object"}
		}
		return canonical.NewObject(), nil
	}
	v, err := canonical.Parse(raw)
	if err != nil {
		return canonical.Object{}, &tools.ArgumentError{Path: "arguments." + name, Msg: err.Error()}
	}
	o, ok := v.(canonical.Object)
	if !ok {
		return canonical.Object{}, &tools.ArgumentError{Path: "arguments." + name, Msg: "want an object, got " + canonical.KindOf(v).String()}
	}
	return o, nil
}

func nonEmptyObjectArg(name string, raw json.RawMessage) (canonical.Object, error) {
	o, err := objectArg(name, raw, true)
	if err != nil {
		return o, err
	}
	if o.Len() == 0 {
		return o, &tools.ArgumentError{Path: "arguments." + name, Msg: "must name at least one field"}
	}
	return o, nil
}
