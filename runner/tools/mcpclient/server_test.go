package mcpclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

const (
	goldenPlaceOrder = `{"customer_id":"C-101","items":[{"product_id":"P-001","quantity":1,"unit_price":89.99},{"product_id":"P-002","quantity":2,"unit_price":34.5}]}`

	initialState = `products=[{"id":"P-001","name":"Wireless Headphones","price":89.99,"stock":42,"category":"audio"},{"id":"P-002","name":"USB-C Hub 7-Port","price":34.5,"stock":15,"category":"accessories"},{"id":"P-003","name":"Ergonomic Laptop Stand","price":27.0,"stock":8,"category":"accessories"},{"id":"P-004","name":"Mechanical Keyboard","price":129.0,"stock":5,"category":"input"}]
customers=[{"id":"C-101","name":"Alex Torres","email":"alex@example.com","balance":300.0}]
orders=[]
`
	goldenState = `products=[{"id":"P-001","name":"Wireless Headphones","price":89.99,"stock":41,"category":"audio"},{"id":"P-002","name":"USB-C Hub 7-Port","price":34.5,"stock":13,"category":"accessories"},{"id":"P-003","name":"Ergonomic Laptop Stand","price":27.0,"stock":8,"category":"accessories"},{"id":"P-004","name":"Mechanical Keyboard","price":129.0,"stock":5,"category":"input"}]
customers=[{"id":"C-101","name":"Alex Torres","email":"alex@example.com","balance":141.01}]
orders=[{"id":"O-001","customer_id":"C-101","status":"paid","items":[{"product_id":"P-001","quantity":1,"unit_price":89.99},{"product_id":"P-002","quantity":2,"unit_price":34.5}],"total":158.99}]
`
	emptyState = "products=[]\ncustomers=[]\norders=[]\n"
)

func TestToolsHidesStateTools(t *testing.T) {
	s := startShop(t, nil)
	tools, err := s.Tools(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
		if !json.Valid(tool.InputSchema) || !strings.Contains(string(tool.InputSchema), `"type":"object"`) {
			t.Errorf("%s input schema = %s", tool.Name, tool.InputSchema)
		}
	}
	slices.Sort(names)
	if fmt.Sprint(names) != "[confirm_payment get_customer list_products place_order]" {
		t.Fatalf("tools = %v", names)
	}
	if !s.HasStateTools() {
		t.Error("HasStateTools = false for the shop")
	}
	i := slices.IndexFunc(tools, func(ti toolInfo) bool { return ti.Name == "get_customer" })
	if tools[i].Description != "Retrieve a customer record and account balance by customer ID." {
		t.Errorf("description = %q", tools[i].Description)
	}
	if got := string(tools[i].InputSchema); got != `{"properties":{"customer_id":{"description":"Customer identifier, e.g. 'C-101'","title":"Customer Id","type":"string"}},"required":["customer_id"],"title":"get_customerArguments","type":"object"}` {
		t.Errorf("get_customer schema = %s", got)
	}
}

// TestStdioGoldenPathAndStateRoundTrip pushes the initial tables, replays the golden
// path and reads the state back: literals such as 300.0 survive both directions.
func TestStdioGoldenPathAndStateRoundTrip(t *testing.T) {
	s := startShop(t, nil)
	ctx := testCtx(t)
	got, err := s.GetState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if stateString(t, got) != emptyState {
		t.Errorf("state before SetState =\n%s", stateString(t, got))
	}
	if err := s.SetState(ctx, initialTables(t)); err != nil {
		t.Fatal(err)
	}
	if got, err = s.GetState(ctx); err != nil || stateString(t, got) != initialState {
		t.Fatalf("state after SetState (err %v) =\n%s\nwant\n%s", err, stateString(t, got), initialState)
	}
	if out := mustCall(t, s, "get_customer", `{"customer_id":"C-101"}`); out != `{"id": "C-101", "name": "Alex Torres", "email": "alex@example.com", "balance": 300.0}` {
		t.Errorf("get_customer = %s", out)
	}
	mustCall(t, s, "place_order", goldenPlaceOrder)
	if out := mustCall(t, s, "confirm_payment", `{"order_id":"O-001"}`); !strings.Contains(out, `"status": "paid"`) || !strings.HasSuffix(out, `"total": 158.99}`) {
		t.Errorf("confirm_payment = %s", out)
	}
	if got, err = s.GetState(ctx); err != nil || stateString(t, got) != goldenState {
		t.Fatalf("state after golden path (err %v) =\n%s\nwant\n%s", err, stateString(t, got), goldenState)
	}
}

func TestCallResults(t *testing.T) {
	s := startShop(t, nil)
	ctx := testCtx(t)
	if err := s.SetState(ctx, initialTables(t)); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, tool, args string
		out              string
		isErr            bool
	}{
		{"empty args mean {}", "list_products", ``, "", false},
		{"tool error", "get_customer", `{"customer_id":"C-999"}`, "Customer 'C-999' not found", true},
		{"argument error", "place_order", `{"customer_id":"C-101"}`, "Invalid arguments for place_order: items is required", true},
		{"unknown tool is a JSON-RPC error", "nope", `{}`, `MCP error -32602: unknown tool "nope"`, true},
	}
	for _, c := range cases {
		out, isErr, err := s.Call(ctx, c.tool, json.RawMessage(c.args))
		if err != nil {
			t.Errorf("%s: err = %v", c.name, err)
			continue
		}
		if isErr != c.isErr || (c.out != "" && out != c.out) {
			t.Errorf("%s: Call = %q, isError=%v; want %q, %v", c.name, out, isErr, c.out, c.isErr)
		}
	}
	// The session survives all of the above.
	if out := mustCall(t, s, "get_customer", `{"customer_id":"C-101"}`); !strings.Contains(out, `"balance": 300.0`) {
		t.Errorf("get_customer after errors = %s", out)
	}
	for _, bad := range []string{`[1]`, `"x"`, `{"a":`, `null`} {
		if _, _, err := s.Call(ctx, "list_products", json.RawMessage(bad)); err == nil || err.Error() != `mcpclient: call "list_products": arguments are not a JSON object` {
			t.Errorf("Call with args %s: err = %v", bad, err)
		}
	}
}

func TestSetStateErrorsLeaveStateUnchanged(t *testing.T) {
	s := startShop(t, nil)
	ctx := testCtx(t)
	if err := s.SetState(ctx, initialTables(t)); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		tables map[string]json.RawMessage
		want   string
	}{
		{map[string]json.RawMessage{"products": json.RawMessage(`[{"id":"P","price":"cheap","stock":1}]`)},
			`mcpclient: _tolokaforge_set_state_ refused the state: Invalid arguments for _tolokaforge_set_state_: state.products[0].price: want a number, got string "cheap"`},
		{map[string]json.RawMessage{"products": json.RawMessage(`{}`)}, `mcpclient: set state: table "products" is not a JSON array`},
		{map[string]json.RawMessage{"orders": json.RawMessage(`[1,`)}, `mcpclient: set state: table "orders" is not valid JSON`},
	}
	for _, c := range cases {
		if err := s.SetState(ctx, c.tables); err == nil || err.Error() != c.want {
			t.Errorf("SetState(%s) = %v, want %q", c.tables, err, c.want)
		}
	}
	got, err := s.GetState(ctx)
	if err != nil || stateString(t, got) != initialState {
		t.Errorf("state after refused SetState (err %v) =\n%s", err, stateString(t, got))
	}
}

func TestDecodeTablesErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{`[]`, "text that is not a JSON object of tables: json: cannot unmarshal array into Go value of type map[string]json.RawMessage"},
		{`null`, "null instead of a JSON object of tables"},
		{`{"products":[]} {}`, "trailing data after the JSON object of tables (offset 17)"},
		{`{"products":{}}`, `table "products" is not a JSON array`},
		{`Error: boom`, "text that is not a JSON object of tables: invalid character 'E' looking for beginning of value"},
	}
	for _, c := range cases {
		_, err := decodeTables([]byte(c.in))
		if err == nil || err.Error() != c.want {
			t.Errorf("decodeTables(%s) = %v, want %q", c.in, err, c.want)
		}
	}
	tables, err := decodeTables([]byte(`{"t":[{"a":300.0,"b":1e16,"c":-0,"d":12345678901234567890123}]}`))
	if err != nil || string(tables["t"]) != `[{"a":300.0,"b":1e16,"c":-0,"d":12345678901234567890123}]` {
		t.Errorf("literals not preserved: %s, %v", tables["t"], err)
	}
}

func FuzzDecodeTables(f *testing.F) {
	f.Add([]byte(`{"products":[{"price":300.0}],"orders":[]}`))
	f.Add([]byte(`{"a":[1e400]}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"a":[]}x`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tables, err := decodeTables(data)
		if err != nil {
			return
		}
		for name, raw := range tables {
			if checkTable(name, raw) != nil {
				t.Fatalf("accepted table %q = %s", name, raw)
			}
		}
		// Re-encoding (what SetState sends) must keep the table bytes.
		out, err := json.Marshal(tables)
		if err != nil {
			t.Fatal(err)
		}
		again, err := decodeTables(out)
		if err != nil {
			t.Fatalf("re-decode %s: %v", out, err)
		}
		for name := range tables {
			a, _ := json.Marshal(tables[name])
			if string(a) != string(again[name]) {
				t.Fatalf("table %q changed: %s -> %s", name, tables[name], again[name])
			}
		}
	})
}

func TestClosedServer(t *testing.T) {
	s := startShop(t, nil)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	ctx := testCtx(t)
	if _, _, err := s.Call(ctx, "list_products", nil); !errors.Is(err, errClosed) {
		t.Errorf("Call after Close = %v", err)
	}
	if _, err := s.GetState(ctx); !errors.Is(err, errClosed) {
		t.Errorf("GetState after Close = %v", err)
	}
	if err := s.Restart(ctx); !errors.Is(err, errClosed) {
		t.Errorf("Restart after Close = %v", err)
	}
	if s.PID() != 0 {
		t.Errorf("PID after Close = %d", s.PID())
	}
}

// TestConcurrentCallsAndClose: calls from many goroutines share one session, and a
// Close racing them ends every call with a result or an error, never a hang or race.
func TestConcurrentCallsAndClose(t *testing.T) {
	s := startShop(t, nil)
	ctx := testCtx(t)
	if err := s.SetState(ctx, initialTables(t)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 16 {
		wg.Go(func() {
			for i := range 20 {
				out, isErr, err := s.Call(ctx, "get_customer", json.RawMessage(`{"customer_id":"C-101"}`))
				if err != nil || isErr || !strings.Contains(out, `"balance": 300.0`) {
					errs <- fmt.Errorf("goroutine %d call %d: %q %v %v", g, i, out, isErr, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	// Now race calls against Close.
	for range 8 {
		wg.Go(func() {
			for range 50 {
				_, _, err := s.Call(ctx, "list_products", nil)
				if err != nil {
					return // ErrClosed or the dying session: both fine
				}
			}
		})
	}
	s.Close()
	wg.Wait()
	if _, _, err := s.Call(ctx, "list_products", nil); !errors.Is(err, errClosed) {
		t.Errorf("Call after Close = %v", err)
	}
}
