package canonical

// Indent returns v as Python's json.dumps(v, sort_keys=True, indent=2) writes it (with
// ensure_ascii): one member or element per line, two spaces per level, ", " never at a
// line end, ": " between key and value, empty containers as {} and [], no trailing
// newline. Scalars are written exactly as in the canonical form, so a line-based diff of
// two Indent outputs shows the same values the hash sees.
func Indent(v Value) []byte { return AppendIndent(nil, v) }

// AppendIndent appends Indent(v) to dst.
func AppendIndent(dst []byte, v Value) []byte { return appendIndent(dst, v, 0) }

func newline(dst []byte, level int) []byte {
	dst = append(dst, '\n')
	for range level {
		dst = append(dst, ' ', ' ')
	}
	return dst
}

func appendIndent(dst []byte, v Value, level int) []byte {
	switch x := v.(type) {
	case Array:
		if len(x) == 0 {
			return append(dst, '[', ']')
		}
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = newline(dst, level+1)
			dst = appendIndent(dst, e, level+1)
		}
		dst = newline(dst, level)
		return append(dst, ']')
	case Object:
		if len(x.members) == 0 {
			return append(dst, '{', '}')
		}
		dst = append(dst, '{')
		for i, m := range x.members {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = newline(dst, level+1)
			dst = AppendString(dst, m.Key)
			dst = append(dst, ':', ' ')
			dst = appendIndent(dst, m.Value, level+1)
		}
		dst = newline(dst, level)
		return append(dst, '}')
	default:
		return Append(dst, v)
	}
}
