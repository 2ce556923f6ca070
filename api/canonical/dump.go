package canonical

// DumpOptions picks one of Python's json.dumps layouts. The zero value is plain
// json.dumps(v): ", " and ": " separators and objects in insertion order (key order for
// an Object that has none, see NewOrderedObject). Strings, numbers and literals are
// written exactly as in the canonical form (ensure_ascii, float repr, allow_nan).
type DumpOptions struct {
	// Compact is separators=(",", ":").
	Compact bool
	// SortKeys is sort_keys=True: objects in code-point key order.
	SortKeys bool
}

// Dump returns v as Python's json.dumps writes it with opts. Dump(v,
// DumpOptions{Compact: true, SortKeys: true}) is Marshal(v); Indent covers indent=2.
func Dump(v Value, opts DumpOptions) []byte { return appendDump(nil, v, opts) }

// appendDump appends Dump(v, opts) to dst.
func appendDump(dst []byte, v Value, opts DumpOptions) []byte {
	e := encoder{buf: dst, spaced: !opts.Compact, inOrder: !opts.SortKeys}
	e.value(v)
	return e.buf
}
