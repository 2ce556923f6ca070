package tools_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"tolokaforge.io/operator/runner/tools"
)

const orderSchema = `{
  "type": "object",
  "properties": {
    "customer_id": {"type": "string"},
    "items": {"type": "array", "items": {
      "type": "object",
      "properties": {"product_id": {"type": "string"}, "quantity": {"type": "integer", "minimum": 1}},
      "required": ["product_id", "quantity"], "additionalProperties": false}},
    "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}]},
    "tags": {"type": "object", "additionalProperties": {"type": "string"}},
    "odd key": {"type": "boolean"}
  },
  "required": ["customer_id", "items"],
  "additionalProperties": false
}`

func TestValidatorNamesTheFailingPath(t *testing.T) {
	v, err := tools.NewValidator(json.RawMessage(orderSchema))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args, path, msg string
	}{
		{`{"customer_id": 1, "items": []}`, "arguments.customer_id", `type: 1 has type "integer", want "string"`},
		{`{"customer_id": "c", "items": [{"product_id": "p", "quantity": 1}, {"product_id": "q", "quantity": 0}]}`,
			"arguments.items[1].quantity", "minimum: 0/1 is less than 1.000000"},
		{`{"customer_id": "c", "items": [{"product_id": "p", "quantity": 1.5}]}`, "arguments.items[0].quantity", `type: 1.5 has type "number", want "integer"`},
		{`{"customer_id": "c", "items": [{"quantity": 1}]}`, "arguments.items[0]", `required: missing properties: ["product_id"]`},
		{`{"customer_id": "c", "items": [{"product_id": "p", "quantity": 1, "x": 1}]}`, "arguments.items[0]", `unexpected additional properties ["x"]`},
		{`{"customer_id": "c"}`, "arguments", `required: missing properties: ["items"]`},
		{`{"customer_id": "c", "items": [], "zz": 1}`, "arguments", `unexpected additional properties ["zz"]`},
		{`{"customer_id": "c", "items": [], "pair": ["a", "b"]}`, "arguments.pair[1]", `type: b has type "string", want "number"`},
		{`{"customer_id": "c", "items": [], "tags": {"ok": "x", "bad": 3}}`, "arguments.tags.bad", `type: 3 has type "integer", want "string"`},
		{`{"customer_id": "c", "items": [], "odd key": "yes"}`, `arguments["odd key"]`, `type: yes has type "string", want "boolean"`},
		{`[1]`, "arguments", "want a JSON object, got array"},
		{`"s"`, "arguments", "want a JSON object, got string"},
		{`null`, "arguments", "want a JSON object, got null"},
		{`{"a":`, "arguments", "not valid JSON: unexpected EOF"},
		{`{} {}`, "arguments", "not valid JSON: data after the top-level value"},
	}
	for _, tc := range cases {
		_, err := v.Validate([]byte(tc.args))
		var ae *tools.ArgumentError
		if !errors.As(err, &ae) || ae.Path != tc.path || ae.Msg != tc.msg {
			t.Errorf("Validate(%s) = %v\n want %s: %s", tc.args, err, tc.path, tc.msg)
		}
	}
}

func TestValidatorAcceptsAndCompacts(t *testing.T) {
	v, err := tools.NewValidator(json.RawMessage(orderSchema))
	if err != nil {
		t.Fatal(err)
	}
	got, err := v.Validate([]byte(` { "customer_id" : "c", "items" : [ ] } `))
	if err != nil || string(got) != `{"customer_id":"c","items":[]}` {
		t.Fatalf("got %s %v", got, err)
	}
	// No schema: any object, and "" is {}.
	any, err := tools.NewValidator(nil)
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{"": "{}", "  ": "{}", `{"x":[1, 2]}`: `{"x":[1,2]}`} {
		if got, err := any.Validate([]byte(in)); err != nil || string(got) != want {
			t.Errorf("Validate(%q) = %s %v, want %s", in, got, err, want)
		}
	}
}

func TestValidatorWithReferencesFallsBackToSchemaPointers(t *testing.T) {
	v, err := tools.NewValidator(json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"#/$defs/pos"}},"$defs":{"pos":{"type":"integer","minimum":1}}}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.Validate([]byte(`{"a":0}`))
	var ae *tools.ArgumentError
	if !errors.As(err, &ae) || ae.Path != "arguments" || !strings.Contains(ae.Msg, "/properties/a") || !strings.Contains(ae.Msg, "minimum") {
		t.Fatalf("got %v", err)
	}
	if _, err := v.Validate([]byte(`{"a":3}`)); err != nil {
		t.Fatal(err)
	}
}

func TestNewValidatorRejectsBadSchemas(t *testing.T) {
	for _, s := range []string{`{"type": 7}`, `[]`, `{"type":"object","properties":{"a":{"$ref":"#/nowhere"}}}`, `{`} {
		if _, err := tools.NewValidator(json.RawMessage(s)); err == nil {
			t.Errorf("NewValidator(%s) accepted", s)
		}
	}
}

func FuzzValidateArguments(f *testing.F) {
	v, err := tools.NewValidator(json.RawMessage(orderSchema))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		``, `{}`, `{"customer_id":"c","items":[]}`, `{"customer_id":"c","items":[{"product_id":"p","quantity":0}]}`,
		`[1]`, `{"a":`, `{"customer_id":1e400}`, `{"items":[[[[]]]]}`, `{"tags":{"":1}}`, "{\"odd key\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := v.Validate(data)
		if err != nil {
			var ae *tools.ArgumentError
			if !errors.As(err, &ae) || !strings.HasPrefix(ae.Path, "arguments") || ae.Msg == "" {
				t.Fatalf("Validate(%q): error %v is not a path-naming ArgumentError", data, err)
			}
			return
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(out, &m) != nil {
			t.Fatalf("Validate(%q) accepted and returned %q, not an object", data, out)
		}
	})
}
