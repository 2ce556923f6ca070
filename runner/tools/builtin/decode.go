package builtin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"tolokaforge.io/operator/runner/tools"
)

// decodeArgs decodes a call's arguments into v strictly: unknown keys and
// mistyped values are argument errors naming the key.
func decodeArgs(raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return &tools.ArgumentError{Path: "arguments." + te.Field, Msg: fmt.Sprintf("want %s, got %s", te.Type, te.Value)}
		}
		if msg, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return &tools.ArgumentError{Path: "arguments", Msg: "unknown argument " + msg}
		}
		return &tools.ArgumentError{Path: "arguments", Msg: err.Error()}
	}
	return nil
}

func required(path, value string) error {
	if value == "" {
		return &tools.ArgumentError{Path: "arguments." + path, Msg: "required, must be a non-empty string"}
	}
	return nil
}
