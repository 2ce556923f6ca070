package shop

import (
	_ "embed"
	"fmt"
	"strconv"

	"tolokaforge.io/operator/examples/shop/internal/pyjson"
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
// The zero value is the empty shop (every table empty). A State is not safe for
// concurrent mutation; the server guards its own copy.
type State struct {
	tables []table
}

type table struct {
	name string
	rows []*pyjson.Object
}

//go:embed shop_orders_02/initial_state.json
var initialStateJSON []byte

// InitialState returns the task's initial tables (shop_orders_02/initial_state.json).
func InitialState() State {
	st, err := ParseState(initialStateJSON)
	if err != nil {
		// The file is embedded at build time and covered by tests.
		panic(fmt.Sprintf("shop: embedded initial_state.json: %v", err))
	}
	return st
}

// ParseState reads a JSON object {table: [record, ...]}. Number literals keep their
// kind (300.00 is the float 300.0, 42 the int 42). The products, customers and orders
// records must carry the fields the tools read, with the right types; errors name
// the offending path, e.g. `state.products[2].stock`.
func ParseState(data []byte) (State, error) {
	v, err := pyjson.Decode(data)
	if err != nil {
		return State{}, fmt.Errorf("parse shop state: %w", err)
	}
	return stateFromValue(v, "state")
}

func stateFromValue(v any, path string) (State, error) {
	obj, ok := v.(*pyjson.Object)
	if !ok {
		return State{}, fmt.Errorf("%s: want an object of tables, got %s", path, describe(v))
	}
	var st State
	for _, m := range obj.Members() {
		tpath := path + "." + m.Key
		arr, ok := m.Value.([]any)
		if !ok {
			return State{}, fmt.Errorf("%s: want an array of records, got %s", tpath, describe(m.Value))
		}
		rows := make([]*pyjson.Object, len(arr))
		for i, e := range arr {
			rpath := tpath + "[" + strconv.Itoa(i) + "]"
			rec, ok := e.(*pyjson.Object)
			if !ok {
				return State{}, fmt.Errorf("%s: want a record object, got %s", rpath, describe(e))
			}
			for _, f := range requiredFields[m.Key] {
				if err := checkField(rec, f, rpath); err != nil {
					return State{}, err
				}
			}
			rows[i] = rec
		}
		st.tables = append(st.tables, table{name: m.Key, rows: rows})
	}
	return st, nil
}

func checkField(rec *pyjson.Object, f fieldRule, path string) error {
	v, ok := rec.Get(f.name)
	if !ok {
		return fmt.Errorf("%s: missing field %q", path, f.name)
	}
	switch f.kind {
	case kindString:
		if _, ok := v.(string); !ok {
			return fmt.Errorf("%s.%s: want a string, got %s", path, f.name, describe(v))
		}
	case kindNumber:
		if _, ok := v.(pyjson.Number); !ok {
			return fmt.Errorf("%s.%s: want a number, got %s", path, f.name, describe(v))
		}
	}
	return nil
}

// describe names a JSON value for an error message without echoing large inputs.
func describe(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean " + strconv.FormatBool(t)
	case string:
		if len(t) > 40 {
			t = t[:40] + "..."
		}
		return "string " + strconv.Quote(t)
	case pyjson.Number:
		return "number " + t.String()
	case []any:
		return "an array"
	case *pyjson.Object:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// rows returns the records of a table (nil when the table is absent).
func (s *State) rows(name string) []*pyjson.Object {
	for _, t := range s.tables {
		if t.name == name {
			return t.rows
		}
	}
	return nil
}

func (s *State) appendRow(name string, rec *pyjson.Object) {
	for i := range s.tables {
		if s.tables[i].name == name {
			s.tables[i].rows = append(s.tables[i].rows, rec)
			return
		}
	}
	s.tables = append(s.tables, table{name: name, rows: []*pyjson.Object{rec}})
}

// findByID returns the first record whose "id" is the string id, as Python's
// next(r for r in rows if r["id"] == id) would.
func findByID(rows []*pyjson.Object, id string) *pyjson.Object {
	for _, r := range rows {
		if v, _ := r.Get("id"); v == id {
			return r
		}
	}
	return nil
}

// Clone returns a deep copy.
func (s State) Clone() State {
	c := State{tables: make([]table, len(s.tables))}
	for i, t := range s.tables {
		rows := make([]*pyjson.Object, len(t.rows))
		for j, r := range t.rows {
			rows[j] = pyjson.Clone(r).(*pyjson.Object)
		}
		c.tables[i] = table{name: t.name, rows: rows}
	}
	return c
}

// value is the state as one JSON object: the tables in their given order, with any
// of products/customers/orders that was never given appended as [] (never omitted,
// never null: the hash of an empty table is over []).
func (s State) value() *pyjson.Object {
	obj := pyjson.NewObject()
	for _, t := range s.tables {
		arr := make([]any, len(t.rows))
		for i, r := range t.rows {
			arr[i] = r
		}
		obj.Set(t.name, arr)
	}
	for _, name := range knownTables {
		if _, ok := obj.Get(name); !ok {
			obj.Set(name, []any{})
		}
	}
	return obj
}

// MarshalJSON writes the tables compactly with Python number literals (300.0, 41).
func (s State) MarshalJSON() ([]byte, error) {
	return pyjson.Marshal(s.value(), pyjson.Compact)
}

// UnmarshalJSON is ParseState.
func (s *State) UnmarshalJSON(data []byte) error {
	st, err := ParseState(data)
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
