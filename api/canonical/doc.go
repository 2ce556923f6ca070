// Package canonical is the project's one Python-compatible JSON value model, decoder
// and encoder, and the canonical encoding shared by the DB service, its client and
// grading. The example shop server (examples/shop) uses it too, for its state and its
// tool outputs.
//
// The canonical form is, byte for byte, what Python 3 produces with
// json.dumps(v, sort_keys=True, separators=(",", ":")) and its other defaults
// (ensure_ascii=True, allow_nan=True): ASCII output with lowercase \uXXXX escapes and
// surrogate pairs, only \" \\ \n \r \t \b \f as short escapes, DEL as \u007f, floats in
// Python repr form (300.0, 1e+16, 1e-05, -0.0), integers of any size and object keys in
// code-point order. The canonical hash is the hex sha256 of those bytes. Indent renders
// json.dumps(v, sort_keys=True, indent=2), the form used for human-readable diffs.
//
// Parse keeps the identity of number literals: a literal with a fraction or exponent is a
// Float (300.00 becomes 300.0), anything else is an Int of arbitrary size. NaN and
// Infinity are rejected by Parse; the encoder still writes them the way Python would
// (NaN, Infinity, -Infinity) for Values built in Go. A string escape naming a lone
// UTF-16 surrogate is kept, as Python keeps it, encoded as WTF-8 inside the Go string,
// and is written back as the same \udXXX escape. Duplicate object keys keep the last
// value, as json.loads does.
//
// Dump writes Python's other json.dumps layouts: the default ", " and ": " separators,
// separators=(",", ":") without sort_keys, and sort_keys with the default separators.
// Python dicts remember insertion order, so ParseWith with KeepOrder and
// NewOrderedObject build Objects that remember it too; Dump without SortKeys writes
// them in that order, while Marshal, Hash, Indent and Equal ignore it.
//
// encoding/json is never used to produce canonical bytes: it escapes <, > and &, writes
// raw UTF-8 and loses the int/float distinction.
//
// Values are immutable by contract: never modify the slice behind an Array or anything
// reachable from a Value that may be shared.
//
// Imports: the standard library.
package canonical
