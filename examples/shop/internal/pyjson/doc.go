// Package pyjson is a small JSON value model that behaves like Python's json module
// where the shop domain needs it to: number literals keep their int/float kind
// (Python's 300.0 stays a float, 42 stays an int), object keys keep their order,
// floats print as Python's repr and round as Python's round(x, n), and the encoder
// writes the same text as json.dumps (ensure_ascii, optional sort_keys).
//
// encoding/json cannot do this: it decodes every number to float64 (losing 300.0 vs
// 300) and sorts map keys. The shop server's state and tool outputs must be
// byte-compatible with the Python server they replace, because the runner hashes the
// state and the LLM reads the outputs.
//
// Values are: nil, bool, string, Number, []any and *Object.
//
// Imports: the standard library only.
package pyjson
