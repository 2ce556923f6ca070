package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// GetState reads the server's tables through _tolokaforge_get_state_. Each table is
// returned as its raw JSON array, so number literals come back exactly as the server
// wrote them.
func (s *Server) GetState(ctx context.Context) (map[string]json.RawMessage, error) {
	if !s.HasStateTools() {
		return nil, errNoStateTools
	}
	out, isErr, err := s.call(ctx, getStateTool, nil)
	if err != nil {
		return nil, err
	}
	if isErr {
		return nil, fmt.Errorf("mcpclient: %s failed: %s", getStateTool, out)
	}
	tables, err := decodeTables([]byte(out))
	if err != nil {
		return nil, fmt.Errorf("mcpclient: %s returned %w", getStateTool, err)
	}
	return tables, nil
}

// SetState replaces the server's tables through _tolokaforge_set_state_ with
// {"state": tables}. The raw table bytes are sent as they are (compacted).
func (s *Server) SetState(ctx context.Context, tables map[string]json.RawMessage) error {
	if !s.HasStateTools() {
		return errNoStateTools
	}
	if tables == nil {
		tables = map[string]json.RawMessage{}
	}
	for name, raw := range tables {
		if err := checkTable(name, raw); err != nil {
			return fmt.Errorf("mcpclient: set state: %w", err)
		}
	}
	args, err := json.Marshal(struct {
		State map[string]json.RawMessage `json:"state"`
	}{tables})
	if err != nil {
		return fmt.Errorf("mcpclient: set state: %w", err)
	}
	out, isErr, err := s.call(ctx, setStateTool, args)
	if err != nil {
		return err
	}
	if isErr {
		return fmt.Errorf("mcpclient: %s refused the state: %s", setStateTool, out)
	}
	return nil
}

// decodeTables parses a get_state text: one JSON object of tables, each an array.
// json.RawMessage keeps every literal byte-for-byte (never through float64).
func decodeTables(text []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(text))
	var tables map[string]json.RawMessage
	if err := dec.Decode(&tables); err != nil {
		return nil, fmt.Errorf("text that is not a JSON object of tables: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("trailing data after the JSON object of tables (offset %d)", dec.InputOffset())
	}
	if tables == nil {
		return nil, errors.New("null instead of a JSON object of tables")
	}
	for name, raw := range tables {
		if err := checkTable(name, raw); err != nil {
			return nil, err
		}
	}
	return tables, nil
}

func checkTable(name string, raw json.RawMessage) error {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '[' {
		return fmt.Errorf("table %q is not a JSON array", name)
	}
	if !json.Valid(t) {
		return fmt.Errorf("table %q is not valid JSON", name)
	}
	return nil
}
