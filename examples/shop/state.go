package shop

import (
	_ "embed"
	"fmt"
	"slices"
	"strconv"

	"tolokaforge.io/operator/api/canonical"
)

// The three tables the tools work on. Other tables pushed by set_state are kept and
// returned untouched.
const (
	tableProducts  = "products"
	tableCustomers = "customers"
	tableOrders    = "orders"
)

var knownTables = []string{tableProducts, tableCustomers, tableOrders}

// requiredFields are the fields the tools read; a record lacking one would make a
// tool fail half-way, so set_state refuses it up front instead.
var requiredFields = map[string][]fieldRule{
	tableProducts:  {{"id", kindString}, {"price", kindNumber}, {"stock", kindNumber}},
	tableCustomers: {{"id", kindString}, {"balance", kindNumber}},
	tableOrders:    {{"id", kindString}, {"customer_id", kindString}, {"status", kindString}, {"total", kindNumber}},
}

type kind int

const (
	kindString kind = iota
	kindNumber
)

type fieldRule struct {
	name string
	kind kind
}

// State is the shop's tables: table name -> records, in the order they were given.
// Records are ordered canonical Objects, so they keep the field order they came with
// as Python dicts do. The zero value is the empty shop (every table empty). A State is
// not safe for concurrent mutation; the server guards its own copy.
type State struct {
	tables []table
}

type table struct {
	name string
	rows []canonical.Object
}

//go:embed shop_orders_02/initial_state.json
var initialStateJSON []byte

// InitialState returns the task's initial tables (shop_orders_02/initial_state.json).
func InitialState() State {
	st, err := parseState(initialStateJSON)
	if err != nil {
		// The file is embedded at build time and covered by tests.
		panic(fmt.Sprintf("shop: embedded initial_state.json: %v", err))
	}
	return st
}

// parseState reads a JSON object {table: [record, ...]}. Number literals keep their
// kind (300.00 is the float 300.0, 42 the int 42) and objects their key order. The
// products, customers and orders records must carry the fields the tools read, with
// the right types; errors name the offending path, e.g. `state.products[2].stock`.
func parseState(data []byte) (State, error) {
	v, err := parseOrdered(data)
	if err != nil {
		return State{}, fmt.Errorf("parse shop state: %w", err)
	}
	return stateFromValue(v, "state")
}

// parseOrdered reads JSON the way Python's json.loads does: number kinds and key
// order are kept, so what the shop writes back is what the Python server would write.
func parseOrdered(data []byte) (canonical.Value, error) {
	return canonical.ParseWith(data, canonical.ParseOptions{KeepOrder: true})
}

func stateFromValue(v canonical.Value, path string) (State, error) {
	obj, ok := v.(canonical.Object)
	if !ok {
		return State{}, fmt.Errorf("%s: want an object of tables, got %s", path, describe(v))
	}
	var st State
	for name, tv := range obj.InOrder() {
		tpath := path + "." + name
		arr, ok := tv.(canonical.Array)
		if !ok {
			return State{}, fmt.Errorf("%s: want an array of records, got %s", tpath, describe(tv))
		}
		rows := make([]canonical.Object, len(arr))
		for i, e := range arr {
			rpath := tpath + "[" + strconv.Itoa(i) + "]"
			rec, ok := e.(canonical.Object)
			if !ok {
				return State{}, fmt.Errorf("%s: want a record object, got %s", rpath, describe(e))
			}
			for _, f := range requiredFields[name] {
				if err := checkField(rec, f, rpath); err != nil {
					return State{}, err
				}
			}
			rows[i] = rec
		}
		st.tables = append(st.tables, table{name: name, rows: rows})
	}
	return st, nil
}

func checkField(rec canonical.Object, f fieldRule, path string) error {
	v, ok := rec.Get(f.name)
	if !ok {
		return fmt.Errorf("%s: missing field %q", path, f.name)
	}
	switch f.kind {
	case kindString:
		if _, ok := v.(canonical.String); !ok {
			return fmt.Errorf("%s.%s: want a string, got %s", path, f.name, describe(v))
		}
	case kindNumber:
		if !isNumber(v) {
			return fmt.Errorf("%s.%s: want a number, got %s", path, f.name, describe(v))
		}
	}
	return nil
}

// describe names a JSON value for an error message without echoing large inputs.
func describe(v canonical.Value) string {
	switch t := v.(type) {
	case nil, canonical.Null:
		return "null"
	case canonical.Bool:
		return "boolean " + strconv.FormatBool(bool(t))
	case canonical.String:
		s := string(t)
		if len(s) > 40 {
			s = s[:40] + "..."
		}
		return "string " + strconv.Quote(s)
	case canonical.Int, canonical.Float:
		return "number " + numString(t)
	case canonical.Array:
		return "an array"
	case canonical.Object:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// rows returns the records of a table (nil when the table is absent). The slice is
// the state's own: assigning to an element replaces that record.
func (s *State) rows(name string) []canonical.Object {
	for _, t := range s.tables {
		if t.name == name {
			return t.rows
		}
	}
	return nil
}

func (s *State) appendRow(name string, rec canonical.Object) {
	for i := range s.tables {
		if s.tables[i].name == name {
			s.tables[i].rows = append(s.tables[i].rows, rec)
			return
		}
	}
	s.tables = append(s.tables, table{name: name, rows: []canonical.Object{rec}})
}

// findByID returns the index of the first record whose "id" is the string id, as
// Python's next(r for r in rows if r["id"] == id) would, or -1.
func findByID(rows []canonical.Object, id string) int {
	for i, r := range rows {
		if v, _ := r.Get("id"); v == canonical.String(id) {
			return i
		}
	}
	return -1
}

// Clone returns a copy that shares no mutable memory with s. Records are immutable
// values, so copying the row slices is enough.
func (s State) Clone() State {
	c := State{tables: make([]table, len(s.tables))}
	for i, t := range s.tables {
		c.tables[i] = table{name: t.name, rows: slices.Clone(t.rows)}
	}
	return c
}

// value is the state as one JSON object: the tables in their given order, with any
// of products/customers/orders that was never given appended as [] (never omitted,
// never null: the hash of an empty table is over []).
func (s State) value() canonical.Object {
	members := make([]canonical.Member, 0, len(s.tables)+len(knownTables))
	for _, t := range s.tables {
		arr := make(canonical.Array, len(t.rows))
		for i, r := range t.rows {
			arr[i] = r
		}
		members = append(members, canonical.Member{Key: t.name, Value: arr})
	}
	for _, name := range knownTables {
		if !s.hasTable(name) {
			members = append(members, canonical.Member{Key: name, Value: canonical.Array{}})
		}
	}
	return canonical.NewOrderedObject(members...)
}

func (s State) hasTable(name string) bool {
	for _, t := range s.tables {
		if t.name == name {
			return true
		}
	}
	return false
}

// MarshalJSON writes the tables as json.dumps(state, separators=(",", ":")) would,
// with Python number literals (300.0, 41) and the records' own key order.
func (s State) MarshalJSON() ([]byte, error) {
	return canonical.Dump(s.value(), canonical.DumpOptions{Compact: true}), nil
}

// UnmarshalJSON is ParseState.
func (s *State) UnmarshalJSON(data []byte) error {
	st, err := parseState(data)
	if err != nil {
		return err
	}
	*s = st
	return nil
}

// tableSizes returns the number of records per table, for logs.
func (s State) tableSizes() map[string]int {
	sizes := make(map[string]int, len(s.tables)+len(knownTables))
	for _, name := range knownTables {
		sizes[name] = 0
	}
	for _, t := range s.tables {
		sizes[t.name] = len(t.rows)
	}
	return sizes
}
