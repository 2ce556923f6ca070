package pyjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// maxDepth bounds nesting so hostile input cannot exhaust the stack; it matches
// encoding/json's own limit.
const maxDepth = 10000

// Decode parses one JSON value, keeping number kinds and key order. Trailing data
// after the value is an error. A repeated object key keeps its first position and
// its last value, as Python's json.loads does.
func Decode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if tok, err := dec.Token(); err != io.EOF {
		if err != nil {
			return nil, fmt.Errorf("after the JSON value: %w", err)
		}
		return nil, fmt.Errorf("unexpected %v after the JSON value at offset %d", tok, dec.InputOffset())
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	tok, err := next(dec)
	if err != nil {
		return nil, err
	}
	return valueFromToken(dec, tok, depth)
}

// next reads a token inside a value, where running out of input is a truncation.
func next(dec *json.Decoder) (json.Token, error) {
	tok, err := dec.Token()
	if errors.Is(err, io.EOF) {
		return nil, errors.New("unexpected end of JSON input")
	}
	return tok, err
}

func valueFromToken(dec *json.Decoder, tok json.Token, depth int) (any, error) {
	switch t := tok.(type) {
	case nil, bool, string:
		return t, nil
	case json.Number:
		n, err := ParseNumber(string(t))
		if err != nil {
			return nil, fmt.Errorf("at offset %d: %w", dec.InputOffset(), err)
		}
		return n, nil
	case json.Delim:
		if depth >= maxDepth {
			return nil, fmt.Errorf("at offset %d: nesting deeper than %d", dec.InputOffset(), maxDepth)
		}
		switch t {
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := next(dec); err != nil { // ']'
				return nil, err
			}
			return arr, nil
		case '{':
			obj := &Object{}
			for dec.More() {
				kt, err := next(dec)
				if err != nil {
					return nil, err
				}
				key, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("at offset %d: object key is %v, not a string", dec.InputOffset(), kt)
				}
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				obj.Set(key, v)
			}
			if _, err := next(dec); err != nil { // '}'
				return nil, err
			}
			return obj, nil
		}
	}
	return nil, fmt.Errorf("at offset %d: unexpected token %v", dec.InputOffset(), tok)
}
