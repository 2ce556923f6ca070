package dbservice

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"tolokaforge.io/operator/api/canonical"
)

// Request bodies are parsed by canonical.Parse (offsets, number identity) and then
// checked here field by field, so every error names the path of the offending value.

type tableSchema struct {
	Name       string
	Fields     canonical.Value
	PrimaryKey string
}

type unstableField struct {
	Table, Field, Reason string
}

type initRequest struct {
	tables   canonical.Object // table name -> array of objects, already checked
	schemas  []tableSchema
	unstable []unstableField
}

type operation struct {
	op     string
	record canonical.Object
	filter canonical.Object
	set    canonical.Object
	key    string // upsert only; "" means the table's key field
}

type patchRequest struct {
	ops       []operation
	ifVersion *int64
	etag      string
}

type queryRequest struct {
	jsonpath string
	stable   bool
}

func parseBody(body []byte, l *Limits) (canonical.Value, *Error) {
	v, err := canonical.ParseWith(body, canonical.ParseOptions{MaxNumberDigits: l.MaxNumberDigits})
	if err != nil {
		details := map[string]any{}
		if se, ok := err.(*canonical.SyntaxError); ok {
			details["offset"] = se.Offset
			switch se.Limit {
			case "max_number_digits":
				details["limit"], details["limit_value"] = se.Limit, l.MaxNumberDigits
			case "max_depth":
				details["limit"], details["limit_value"] = se.Limit, canonical.DefaultMaxDepth
			}
		}
		return nil, newError(http.StatusBadRequest, errTypeInvalidJSON, details, "%s", err.Error())
	}
	return v, nil
}

func describeKind(v canonical.Value) string {
	switch k := canonical.KindOf(v); k {
	case canonical.KindObject, canonical.KindArray, canonical.KindInt:
		return "an " + k.String()
	case canonical.KindNull:
		return "null"
	default:
		return "a " + k.String()
	}
}

func asObject(v canonical.Value, path string) (canonical.Object, *Error) {
	o, ok := v.(canonical.Object)
	if !ok {
		return canonical.Object{}, errValidation(path, "must be an object, got %s", describeKind(v))
	}
	return o, nil
}

func checkKeys(o canonical.Object, path string, allowed ...string) *Error {
	for k := range o.All() {
		if !slices.Contains(allowed, k) {
			return errValidation(path, "unknown key %q (allowed: %s)", k, strings.Join(allowed, ", "))
		}
	}
	return nil
}

// optString reads an optional string member; null counts as absent.
func optString(o canonical.Object, key, path string) (string, bool, *Error) {
	v, ok := o.Get(key)
	if !ok || canonical.KindOf(v) == canonical.KindNull {
		return "", false, nil
	}
	s, isStr := v.(canonical.String)
	if !isStr {
		return "", false, errValidation(path+"."+key, "must be a string, got %s", describeKind(v))
	}
	return string(s), true, nil
}

func quote(s string) string { return strconv.Quote(s) }

func decodeInit(body []byte, l *Limits) (*initRequest, *Error) {
	v, e := parseBody(body, l)
	if e != nil {
		return nil, e
	}
	root, e := asObject(v, "$")
	if e != nil {
		return nil, e
	}
	if e := checkKeys(root, "$", "tables", "schemas", "unstable_fields"); e != nil {
		return nil, e
	}
	req := &initRequest{}
	tv, ok := root.Get("tables")
	if !ok {
		return nil, errValidation("$", "missing required key \"tables\"")
	}
	if req.tables, e = asObject(tv, "$.tables"); e != nil {
		return nil, e
	}
	for name, recs := range req.tables.All() {
		if e := checkName("table", "$.tables", name); e != nil {
			return nil, e
		}
		path := "$.tables[" + quote(name) + "]"
		arr, ok := recs.(canonical.Array)
		if !ok {
			return nil, errValidation(path, "must be an array of records, got %s", describeKind(recs))
		}
		for i, r := range arr {
			if _, ok := r.(canonical.Object); !ok {
				return nil, errValidation(fmt.Sprintf("%s[%d]", path, i), "record must be an object, got %s", describeKind(r))
			}
		}
	}
	if sv, ok := root.Get("schemas"); ok && canonical.KindOf(sv) != canonical.KindNull {
		if req.schemas, e = decodeSchemas(sv); e != nil {
			return nil, e
		}
	}
	if uv, ok := root.Get("unstable_fields"); ok && canonical.KindOf(uv) != canonical.KindNull {
		if req.unstable, e = decodeUnstable(uv); e != nil {
			return nil, e
		}
	}
	return req, nil
}

func decodeSchemas(v canonical.Value) ([]tableSchema, *Error) {
	arr, ok := v.(canonical.Array)
	if !ok {
		return nil, errValidation("$.schemas", "must be an array, got %s", describeKind(v))
	}
	out := make([]tableSchema, 0, len(arr))
	seen := map[string]int{}
	for i, item := range arr {
		path := fmt.Sprintf("$.schemas[%d]", i)
		o, e := asObject(item, path)
		if e != nil {
			return nil, e
		}
		if e := checkKeys(o, path, "table_name", "fields", "primary_key"); e != nil {
			return nil, e
		}
		name, has, e := optString(o, "table_name", path)
		if e != nil {
			return nil, e
		}
		if !has || name == "" {
			return nil, errValidation(path+".table_name", "is required and must be a non-empty string")
		}
		if e := checkName("table", path+".table_name", name); e != nil {
			return nil, e
		}
		if j, dup := seen[name]; dup {
			return nil, errValidation(path+".table_name", "table %q already has a schema at $.schemas[%d]", name, j)
		}
		seen[name] = i
		pk, _, e := optString(o, "primary_key", path)
		if e != nil {
			return nil, e
		}
		fields, ok := o.Get("fields")
		if !ok {
			fields = canonical.Object{}
		}
		out = append(out, tableSchema{Name: name, Fields: fields, PrimaryKey: pk})
	}
	return out, nil
}

func decodeUnstable(v canonical.Value) ([]unstableField, *Error) {
	arr, ok := v.(canonical.Array)
	if !ok {
		return nil, errValidation("$.unstable_fields", "must be an array, got %s", describeKind(v))
	}
	out := make([]unstableField, 0, len(arr))
	for i, item := range arr {
		path := fmt.Sprintf("$.unstable_fields[%d]", i)
		o, e := asObject(item, path)
		if e != nil {
			return nil, e
		}
		if e := checkKeys(o, path, "table_name", "field_name", "reason"); e != nil {
			return nil, e
		}
		tbl, hasT, e := optString(o, "table_name", path)
		if e != nil {
			return nil, e
		}
		fld, hasF, e := optString(o, "field_name", path)
		if e != nil {
			return nil, e
		}
		if !hasT {
			return nil, errValidation(path+".table_name", "is required")
		}
		if !hasF {
			return nil, errValidation(path+".field_name", "is required")
		}
		if e := checkName("table", path+".table_name", tbl); e != nil {
			return nil, e
		}
		reason, _, e := optString(o, "reason", path)
		if e != nil {
			return nil, e
		}
		uf := unstableField{Table: tbl, Field: fld, Reason: reason}
		// A repeated pair filters nothing more; keep the first, with its reason.
		if !slices.ContainsFunc(out, func(x unstableField) bool { return x.Table == tbl && x.Field == fld }) {
			out = append(out, uf)
		}
	}
	return out, nil
}

var opKeys = map[string][]string{
	"insert": {"op", "record"},
	"update": {"op", "filter", "set"},
	"delete": {"op", "filter"},
	"upsert": {"op", "record", "key"},
}

func decodePatch(body []byte, l *Limits) (*patchRequest, *Error) {
	v, e := parseBody(body, l)
	if e != nil {
		return nil, e
	}
	root, e := asObject(v, "$")
	if e != nil {
		return nil, e
	}
	if e := checkKeys(root, "$", "operations", "if_version", "etag"); e != nil {
		return nil, e
	}
	req := &patchRequest{}
	if iv, ok := root.Get("if_version"); ok && canonical.KindOf(iv) != canonical.KindNull {
		n, isInt := iv.(canonical.Int)
		var v int64
		if isInt {
			v, isInt = n.Int64()
		}
		if !isInt {
			return nil, errValidation("$.if_version", "must be an integer, got %s", string(canonical.Marshal(iv)))
		}
		req.ifVersion = &v
	}
	if req.etag, _, e = optString(root, "etag", "$"); e != nil {
		return nil, e
	}
	ov, ok := root.Get("operations")
	if !ok {
		return nil, errValidation("$", "missing required key \"operations\"")
	}
	arr, ok := ov.(canonical.Array)
	if !ok {
		return nil, errValidation("$.operations", "must be an array, got %s", describeKind(ov))
	}
	if len(arr) == 0 {
		return nil, errValidation("$.operations", "must hold at least one operation")
	}
	if len(arr) > l.MaxOpsPerPatch {
		return nil, errLimit(http.StatusRequestEntityTooLarge, errTypePayloadTooLarge, "max_operations_per_patch",
			int64(l.MaxOpsPerPatch), int64(len(arr)), "$.operations holds %d operations, more than allowed; split the PATCH", len(arr))
	}
	req.ops = make([]operation, 0, len(arr))
	for i, item := range arr {
		op, e := decodeOp(i, item)
		if e != nil {
			return nil, e
		}
		req.ops = append(req.ops, op)
	}
	return req, nil
}

func decodeOp(i int, v canonical.Value) (operation, *Error) {
	o, ok := v.(canonical.Object)
	if !ok {
		return operation{}, errInvalidOp(i, "must be an object, got %s", describeKind(v))
	}
	opv, ok := o.Get("op")
	if !ok {
		return operation{}, errInvalidOp(i, "missing \"op\"")
	}
	name, ok := opv.(canonical.String)
	if !ok {
		return operation{}, errInvalidOp(i, "\"op\" must be a string, got %s", describeKind(opv))
	}
	allowed, known := opKeys[string(name)]
	if !known {
		return operation{}, errInvalidOp(i, "unknown op %q (allowed: insert, update, delete, upsert)", string(name))
	}
	for k := range o.All() {
		if !slices.Contains(allowed, k) {
			return operation{}, errInvalidOp(i, "unknown key %q for op %q (allowed: %s)", k, string(name), strings.Join(allowed, ", "))
		}
	}
	op := operation{op: string(name)}
	objField := func(key string) (canonical.Object, *Error) {
		fv, ok := o.Get(key)
		if !ok {
			return canonical.Object{}, errInvalidOp(i, "op %q requires %q", op.op, key)
		}
		fo, ok := fv.(canonical.Object)
		if !ok {
			return canonical.Object{}, errInvalidOp(i, "%q must be an object, got %s", key, describeKind(fv))
		}
		return fo, nil
	}
	var e *Error
	switch op.op {
	case "insert":
		op.record, e = objField("record")
	case "update":
		if op.filter, e = objField("filter"); e == nil {
			op.set, e = objField("set")
		}
	case "delete":
		op.filter, e = objField("filter")
	case "upsert":
		if op.record, e = objField("record"); e == nil {
			if kv, ok := o.Get("key"); ok && canonical.KindOf(kv) != canonical.KindNull {
				ks, isStr := kv.(canonical.String)
				if !isStr || ks == "" {
					return operation{}, errInvalidOp(i, "\"key\" must be a non-empty string, got %s", string(canonical.Marshal(kv)))
				}
				op.key = string(ks)
			}
		}
	}
	return op, e
}

func decodeQuery(body []byte, l *Limits) (*queryRequest, *Error) {
	v, e := parseBody(body, l)
	if e != nil {
		return nil, e
	}
	root, e := asObject(v, "$")
	if e != nil {
		return nil, e
	}
	if e := checkKeys(root, "$", "jsonpath", "stable"); e != nil {
		return nil, e
	}
	path, has, e := optString(root, "jsonpath", "$")
	if e != nil {
		return nil, e
	}
	if !has || path == "" {
		return nil, errValidation("$.jsonpath", "is required and must be a non-empty string")
	}
	req := &queryRequest{jsonpath: path}
	if sv, ok := root.Get("stable"); ok && canonical.KindOf(sv) != canonical.KindNull {
		b, isBool := sv.(canonical.Bool)
		if !isBool {
			return nil, errValidation("$.stable", "must be a boolean, got %s", describeKind(sv))
		}
		req.stable = bool(b)
	}
	return req, nil
}
