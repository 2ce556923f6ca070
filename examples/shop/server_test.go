package shop

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// session connects a real MCP client to NewServer(st) over the SDK's in-memory
// transport.
func session(t *testing.T, st State) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, stt := mcp.NewInMemoryTransports()
	ss, err := NewServer(st).Connect(ctx, stt, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "shop-test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

// call invokes a tool with raw JSON arguments and returns its text and IsError.
func call(t *testing.T, cs *mcp.ClientSession, name, args string) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("%s(%s): %v", name, args, err)
	}
	var texts []string
	for _, c := range res.Content {
		texts = append(texts, c.(*mcp.TextContent).Text)
	}
	return strings.Join(texts, "\n"), res.IsError
}

func mustCall(t *testing.T, cs *mcp.ClientSession, name, args string) string {
	t.Helper()
	out, isErr := call(t, cs, name, args)
	if isErr {
		t.Fatalf("%s(%s) failed: %s", name, args, out)
	}
	return out
}

func stateText(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	return mustCall(t, cs, getStateTool, `{}`)
}

const goldenPlaceOrder = `{"customer_id":"C-101","items":[{"product_id":"P-001","quantity":1,"unit_price":89.99},{"product_id":"P-002","quantity":2,"unit_price":34.5}]}`

func TestToolsListed(t *testing.T) {
	cs := session(t, State{})
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	schemas := map[string]string{}
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		b, _ := json.Marshal(tool.InputSchema)
		schemas[tool.Name] = string(b)
	}
	slices.Sort(names)
	want := []string{getStateTool, SetStateTool, "confirm_payment", "get_customer", "list_products", "place_order"}
	if !slices.Equal(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}
	for _, spec := range toolSpecs {
		var a, b any
		json.Unmarshal(spec.Parameters, &a)
		json.Unmarshal([]byte(schemas[spec.Name]), &b)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("%s input schema = %s, want tools.json's %s", spec.Name, schemas[spec.Name], spec.Parameters)
		}
	}
}

func TestGoldenPath(t *testing.T) {
	cs := session(t, InitialState())

	if got := mustCall(t, cs, "list_products", `{}`); got != `[{"id": "P-001", "name": "Wireless Headphones", "price": 89.99, "stock": 42, "category": "audio"}, `+
		`{"id": "P-002", "name": "USB-C Hub 7-Port", "price": 34.5, "stock": 15, "category": "accessories"}, `+
		`{"id": "P-003", "name": "Ergonomic Laptop Stand", "price": 27.0, "stock": 8, "category": "accessories"}, `+
		`{"id": "P-004", "name": "Mechanical Keyboard", "price": 129.0, "stock": 5, "category": "input"}]` {
		t.Errorf("list_products = %s", got)
	}
	if got := mustCall(t, cs, "get_customer", `{"customer_id":"C-101"}`); got != `{"id": "C-101", "name": "Alex Torres", "email": "alex@example.com", "balance": 300.0}` {
		t.Errorf("get_customer = %s", got)
	}
	pending := `{"id": "O-001", "customer_id": "C-101", "status": "pending", "items": [{"product_id": "P-001", "quantity": 1, "unit_price": 89.99}, {"product_id": "P-002", "quantity": 2, "unit_price": 34.5}], "total": 158.99}`
	if got := mustCall(t, cs, "place_order", goldenPlaceOrder); got != pending {
		t.Errorf("place_order = %s\nwant        %s", got, pending)
	}
	paid := strings.Replace(pending, `"pending"`, `"paid"`, 1)
	if got := mustCall(t, cs, "confirm_payment", `{"order_id":"O-001"}`); got != paid {
		t.Errorf("confirm_payment = %s\nwant            %s", got, paid)
	}

	want := `{"products":[{"id":"P-001","name":"Wireless Headphones","price":89.99,"stock":41,"category":"audio"},` +
		`{"id":"P-002","name":"USB-C Hub 7-Port","price":34.5,"stock":13,"category":"accessories"},` +
		`{"id":"P-003","name":"Ergonomic Laptop Stand","price":27.0,"stock":8,"category":"accessories"},` +
		`{"id":"P-004","name":"Mechanical Keyboard","price":129.0,"stock":5,"category":"input"}],` +
		`"customers":[{"id":"C-101","name":"Alex Torres","email":"alex@example.com","balance":141.01}],` +
		`"orders":[{"id":"O-001","customer_id":"C-101","status":"paid","items":[{"product_id":"P-001","quantity":1,"unit_price":89.99},` +
		`{"product_id":"P-002","quantity":2,"unit_price":34.5}],"total":158.99}]}`
	got := stateText(t, cs)
	if got != want {
		t.Fatalf("state after golden path =\n%s\nwant\n%s", got, want)
	}
	// The fields grading.yaml's jsonpaths assert, read the way a grader would.
	var st struct {
		Products []struct {
			Stock json.Number `json:"stock"`
		} `json:"products"`
		Customers []struct {
			Balance json.Number `json:"balance"`
		} `json:"customers"`
		Orders []struct {
			ID         string      `json:"id"`
			CustomerID string      `json:"customer_id"`
			Status     string      `json:"status"`
			Total      json.Number `json:"total"`
		} `json:"orders"`
	}
	dec := json.NewDecoder(strings.NewReader(got))
	dec.UseNumber()
	if err := dec.Decode(&st); err != nil {
		t.Fatal(err)
	}
	o := st.Orders[0]
	checks := []struct{ name, got, want string }{
		{"orders[0].id", o.ID, "O-001"},
		{"orders[0].customer_id", o.CustomerID, "C-101"},
		{"orders[0].status", o.Status, "paid"},
		{"orders[0].total", o.Total.String(), "158.99"},
		{"customers[0].balance", st.Customers[0].Balance.String(), "141.01"},
		{"products[0].stock", st.Products[0].Stock.String(), "41"},
		{"products[1].stock", st.Products[1].Stock.String(), "13"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %s, want %s", c.name, c.got, c.want)
		}
	}
}

func TestToolErrorsLeaveStateUnchanged(t *testing.T) {
	cases := []struct {
		name  string
		setup []string // successful place_order arguments run first
		pay   bool     // confirm O-001 after setup
		tool  string
		args  string
		want  string
	}{
		{name: "unknown customer", tool: "get_customer", args: `{"customer_id":"C-999"}`, want: "Customer 'C-999' not found"},
		{name: "order for unknown customer", tool: "place_order", args: `{"customer_id":"C-999","items":[{"product_id":"P-001","quantity":1,"unit_price":1}]}`, want: "Customer 'C-999' not found"},
		{name: "unknown product after a valid one", tool: "place_order", args: `{"customer_id":"C-101","items":[{"product_id":"P-001","quantity":1,"unit_price":1},{"product_id":"P-999","quantity":1,"unit_price":1}]}`, want: "Product 'P-999' not found"},
		{name: "insufficient stock", tool: "place_order", args: `{"customer_id":"C-101","items":[{"product_id":"P-004","quantity":6,"unit_price":129}]}`, want: "Insufficient stock for 'P-004'"},
		{name: "repeated product beyond stock", tool: "place_order", args: `{"customer_id":"C-101","items":[{"product_id":"P-004","quantity":3,"unit_price":129},{"product_id":"P-004","quantity":3,"unit_price":129}]}`, want: "Insufficient stock for 'P-004'"},
		{name: "unknown order", tool: "confirm_payment", args: `{"order_id":"O-999"}`, want: "Order 'O-999' not found"},
		{name: "order already paid", setup: []string{goldenPlaceOrder}, pay: true, tool: "confirm_payment", args: `{"order_id":"O-001"}`, want: "Order 'O-001' cannot be paid"},
		{name: "insufficient balance", setup: []string{`{"customer_id":"C-101","items":[{"product_id":"P-004","quantity":2,"unit_price":129},{"product_id":"P-001","quantity":1,"unit_price":89.99}]}`}, tool: "confirm_payment", args: `{"order_id":"O-001"}`, want: "Insufficient balance for customer 'C-101'"},
		{name: "missing customer_id", tool: "get_customer", args: `{}`, want: "Invalid arguments for get_customer: customer_id is required"},
		{name: "customer_id not a string", tool: "get_customer", args: `{"customer_id":101}`, want: "Invalid arguments for get_customer: customer_id must be a string, got number 101"},
		{name: "arguments not an object", tool: "get_customer", args: `["C-101"]`, want: "Invalid arguments for get_customer: arguments must be a JSON object, got an array"},
		{name: "missing order_id", tool: "confirm_payment", args: `{"order":"O-001"}`, want: "Invalid arguments for confirm_payment: order_id is required"},
		{name: "missing items", tool: "place_order", args: `{"customer_id":"C-101"}`, want: "Invalid arguments for place_order: items is required"},
		{name: "items not an array", tool: "place_order", args: `{"customer_id":"C-101","items":{"product_id":"P-001"}}`, want: "Invalid arguments for place_order: items must be an array, got an object"},
		{name: "item not an object", tool: "place_order", args: `{"customer_id":"C-101","items":["P-001"]}`, want: `Invalid arguments for place_order: items[0] must be an object, got string "P-001"`},
		{name: "quantity zero", tool: "place_order", args: `{"customer_id":"C-101","items":[{"product_id":"P-001","quantity":0,"unit_price":1}]}`, want: "Invalid arguments for place_order: items[0].quantity must be an integer >= 1, got number 0"},
		{name: "quantity fractional", tool: "place_order", args: `{"customer_id":"C-101","items":[{"product_id":"P-001","quantity":1,"unit_price":1},{"product_id":"P-002","quantity":1.5,"unit_price":1}]}`, want: "Invalid arguments for place_order: items[1].quantity must be an integer >= 1, got number 1.5"},
		{name: "quantity string", tool: "place_order", args: `{"customer_id":"C-101","items":[{"product_id":"P-001","quantity":"2","unit_price":1}]}`, want: `Invalid arguments for place_order: items[0].quantity must be an integer >= 1, got string "2"`},
		{name: "unit_price negative", tool: "place_order", args: `{"customer_id":"C-101","items":[{"product_id":"P-001","quantity":1,"unit_price":-0.01}]}`, want: "Invalid arguments for place_order: items[0].unit_price must be a number >= 0, got number -0.01"},
		{name: "unit_price missing", tool: "place_order", args: `{"customer_id":"C-101","items":[{"product_id":"P-001","quantity":1}]}`, want: "Invalid arguments for place_order: items[0].unit_price is required"},
		{name: "product_id missing", tool: "place_order", args: `{"customer_id":"C-101","items":[{"quantity":1,"unit_price":1}]}`, want: "Invalid arguments for place_order: items[0].product_id is required"},
		{name: "set_state without state", tool: SetStateTool, args: `{"tables":{}}`, want: "Invalid arguments for _tolokaforge_set_state_: state is required"},
		{name: "set_state bad price", tool: SetStateTool, args: `{"state":{"products":[{"id":"P-1","price":"x","stock":1}]}}`, want: `Invalid arguments for _tolokaforge_set_state_: state.products[0].price: want a number, got string "x"`},
		{name: "set_state table not an array", tool: SetStateTool, args: `{"state":{"orders":{}}}`, want: `Invalid arguments for _tolokaforge_set_state_: state.orders: want an array of records, got an object`},
		{name: "set_state state not an object", tool: SetStateTool, args: `{"state":[]}`, want: `Invalid arguments for _tolokaforge_set_state_: state: want an object of tables, got an array`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cs := session(t, InitialState())
			for _, args := range c.setup {
				mustCall(t, cs, "place_order", args)
			}
			if c.pay {
				mustCall(t, cs, "confirm_payment", `{"order_id":"O-001"}`)
			}
			before := stateText(t, cs)
			got, isErr := call(t, cs, c.tool, c.args)
			if !isErr || got != c.want {
				t.Errorf("%s(%s) = %q (isError=%v), want error %q", c.tool, c.args, got, isErr, c.want)
			}
			if after := stateText(t, cs); after != before {
				t.Errorf("state changed by a failed call:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

func TestPythonRoundingInOrders(t *testing.T) {
	state := `{"products":[{"id":"A","price":0.125,"stock":9},{"id":"B","price":0.375,"stock":9},{"id":"C","price":2.675,"stock":9},{"id":"D","price":1.005,"stock":9}],` +
		`"customers":[{"id":"K","balance":10.0}],"orders":[]}`
	cases := []struct {
		items   string
		total   string
		balance string // after confirm_payment
	}{
		{`[{"product_id":"A","quantity":1,"unit_price":0}]`, "0.12", "9.88"},                                                // exact tie -> even
		{`[{"product_id":"A","quantity":1,"unit_price":0},{"product_id":"A","quantity":1,"unit_price":0}]`, "0.24", "9.76"}, // round(0.12 + 0.125)
		{`[{"product_id":"B","quantity":1,"unit_price":0}]`, "0.38", "9.62"},
		{`[{"product_id":"C","quantity":1,"unit_price":0}]`, "2.67", "7.33"},                                                // 2.675 is 2.67499...
		{`[{"product_id":"C","quantity":1,"unit_price":0},{"product_id":"D","quantity":3,"unit_price":0}]`, "5.68", "4.32"}, // Python: 5.68
	}
	for _, c := range cases {
		cs := session(t, mustParse(t, state))
		out := mustCall(t, cs, "place_order", `{"customer_id":"K","items":`+c.items+`}`)
		if !strings.HasSuffix(out, `"total": `+c.total+`}`) {
			t.Errorf("items %s: order %s, want total %s", c.items, out, c.total)
		}
		mustCall(t, cs, "confirm_payment", `{"order_id":"O-001"}`)
		if got := mustCall(t, cs, "get_customer", `{"customer_id":"K"}`); got != `{"id": "K", "balance": `+c.balance+`}` {
			t.Errorf("items %s: customer %s, want balance %s", c.items, got, c.balance)
		}
	}
}

func mustParse(t *testing.T, s string) State {
	t.Helper()
	st, err := parseState([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestNumberKindsFollowPython: an int price stays an int in the order line, the
// total is a float (it starts at 0.0), and a float stock stays a float, as in Python.
func TestNumberKindsFollowPython(t *testing.T) {
	cs := session(t, mustParse(t, `{"products":[{"id":"P","price":27,"stock":5.0}],"customers":[{"id":"C","balance":100}],"orders":[]}`))
	mustCall(t, cs, "place_order", `{"customer_id":"C","items":[{"product_id":"P","quantity":2.0,"unit_price":27}]}`)
	mustCall(t, cs, "confirm_payment", `{"order_id":"O-001"}`)
	want := `{"products":[{"id":"P","price":27,"stock":3.0}],"customers":[{"id":"C","balance":46.0}],` +
		`"orders":[{"id":"O-001","customer_id":"C","status":"paid","items":[{"product_id":"P","quantity":2,"unit_price":27}],"total":54.0}]}`
	if got := stateText(t, cs); got != want {
		t.Errorf("state =\n%s\nwant\n%s", got, want)
	}
}

func TestStateConvention(t *testing.T) {
	cs := session(t, State{})
	if got := stateText(t, cs); got != `{"products":[],"customers":[],"orders":[]}` {
		t.Errorf("empty server state = %s", got)
	}
	if got := mustCall(t, cs, "list_products", `{}`); got != `[]` {
		t.Errorf("list_products on empty state = %s", got)
	}
	// set_state replaces everything, keeps extra tables and key order, and fills the
	// missing known tables with [].
	if got := mustCall(t, cs, SetStateTool, `{"state":{"customers":[{"id":"C-1","balance":300.00,"vip":true}],"audit":[{"x":1e16}]}}`); got != `{"status": "ok"}` {
		t.Errorf("set_state = %s", got)
	}
	if got := stateText(t, cs); got != `{"customers":[{"id":"C-1","balance":300.0,"vip":true}],"audit":[{"x":1e+16}],"products":[],"orders":[]}` {
		t.Errorf("state after set_state = %s", got)
	}
	mustCall(t, cs, SetStateTool, `{"state":{"products":[{"id":"P-1","price":1.5,"stock":0},{"id":"P-2","price":2.0,"stock":1}],"customers":[{"id":"C-1","balance":9.0}],"orders":[]}}`)
	if got := mustCall(t, cs, "list_products", `{}`); got != `[{"id": "P-2", "price": 2.0, "stock": 1}]` {
		t.Errorf("list_products hides stock 0: got %s", got)
	}
	mustCall(t, cs, "place_order", `{"customer_id":"C-1","items":[{"product_id":"P-2","quantity":1,"unit_price":2}]}`)
	// The id counts orders, so the second order is O-002.
	mustCall(t, cs, SetStateTool, `{"state":{"products":[{"id":"P-2","price":2.0,"stock":5}],"customers":[{"id":"C-1","balance":9.0}],"orders":[{"id":"O-001","customer_id":"C-1","status":"paid","total":2.0}]}}`)
	out := mustCall(t, cs, "place_order", `{"customer_id":"C-1","items":[{"product_id":"P-2","quantity":1,"unit_price":2}]}`)
	if !strings.HasPrefix(out, `{"id": "O-002", `) {
		t.Errorf("second order = %s", out)
	}
}

func TestParseStateErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{`[]`, "state: want an object of tables, got an array"},
		{`{"products":[{"id":"P","price":1.0}]}`, `state.products[0]: missing field "stock"`},
		{`{"products":[{"id":"P","price":1.0,"stock":"5"}]}`, `state.products[0].stock: want a number, got string "5"`},
		{`{"customers":[{"id":7,"balance":1.0}]}`, `state.customers[0].id: want a string, got number 7`},
		{`{"orders":[{"id":"O","customer_id":"C","status":null,"total":1.0}]}`, `state.orders[0].status: want a string, got null`},
		{`{"orders":[1]}`, `state.orders[0]: want a record object, got number 1`},
		{`{"products":[{"id":"P","price":1e999,"stock":1}]}`, `parse shop state: invalid JSON at offset 31: number 1e999 is outside the float64 range`},
		{`{"products":[]`, `parse shop state: invalid JSON at offset 14: unexpected end of input, expected ',' or '}' in object`},
	}
	for _, c := range cases {
		_, err := parseState([]byte(c.in))
		if err == nil || err.Error() != c.want {
			t.Errorf("ParseState(%s) error = %v, want %q", c.in, err, c.want)
		}
	}
}

func TestNewServerCopiesItsInitialState(t *testing.T) {
	initial := InitialState()
	cs := session(t, initial)
	mustCall(t, cs, "place_order", goldenPlaceOrder)
	b, _ := initial.MarshalJSON()
	want, _ := InitialState().MarshalJSON()
	if string(b) != string(want) {
		t.Errorf("the caller's State was mutated by the server:\n%s", b)
	}
}

// FuzzParseState: whatever ParseState accepts re-encodes and parses back to the same
// text (the runner round-trips state through get/set on every call).
func FuzzParseState(f *testing.F) {
	f.Add(initialStateJSON)
	f.Add([]byte(`{"products":[{"id":"P","price":27,"stock":5.0}],"x":[{}]}`))
	f.Add([]byte(`{"orders":[{"id":"O","customer_id":"C","status":"s","total":-0.0}]}`))
	f.Add([]byte(`{"products":{}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := parseState(data)
		if err != nil {
			return
		}
		out, err := st.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON after ParseState(%q): %v", data, err)
		}
		st2, err := parseState(out)
		if err != nil {
			t.Fatalf("ParseState(MarshalJSON) = %v for %s", err, out)
		}
		out2, _ := st2.MarshalJSON()
		if string(out) != string(out2) {
			t.Fatalf("not a fixed point: %s vs %s", out, out2)
		}
	})
}

// FuzzPlaceOrder drives place_order with arbitrary arguments: it must never panic,
// a failure must leave the state as it was, and a success must never leave a
// negative stock.
func FuzzPlaceOrder(f *testing.F) {
	f.Add([]byte(goldenPlaceOrder))
	f.Add([]byte(`{"customer_id":"C-101","items":[{"product_id":"P-004","quantity":3,"unit_price":0},{"product_id":"P-004","quantity":3,"unit_price":0}]}`))
	f.Add([]byte(`{"customer_id":"C-101","items":[]}`))
	f.Add([]byte(`{"customer_id":"C-101","items":[{"product_id":"P-001","quantity":1e300,"unit_price":0}]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, args []byte) {
		st := InitialState()
		before, _ := st.MarshalJSON()
		a, err := decodeArgs("place_order", args)
		if err == nil {
			_, err = placeOrder(&st, a)
		}
		after, merr := st.MarshalJSON()
		if merr != nil {
			t.Fatalf("state no longer encodes: %v", merr)
		}
		if err != nil {
			if string(before) != string(after) {
				t.Fatalf("failed call (%v) changed the state", err)
			}
			return
		}
		for _, p := range st.rows(tableProducts) {
			s, _ := p.Get("stock")
			if strings.HasPrefix(fmt.Sprint(s), "-") {
				t.Fatalf("negative stock after %s: %s", args, after)
			}
		}
	})
}
