package pyjson

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Style selects the separators and key order of Marshal, mirroring json.dumps
// arguments.
type Style struct {
	ItemSep  string // between array items and object members
	KeySep   string // between a key and its value
	SortKeys bool   // sort object keys by code point (json.dumps sort_keys=True)
}

var (
	// Spaced is json.dumps' default layout (", " and ": "), which is what an LLM sees
	// from a Python tool that returns json.dumps(result).
	Spaced = Style{ItemSep: ", ", KeySep: ": "}
	// Compact is separators=(",", ":").
	Compact = Style{ItemSep: ",", KeySep: ":"}
)

// Marshal writes v as Python's json.dumps would with ensure_ascii=True: every
// character outside printable ASCII is escaped as \uXXXX (lowercase hex, surrogate
// pairs above U+FFFF, DEL included), and '/', '<', '>', '&' are left alone. A value
// outside the model (see the package doc) or a non-finite float is an error.
func Marshal(v any, style Style) ([]byte, error) {
	var buf bytes.Buffer
	if err := encodeValue(&buf, v, style); err != nil {
		var pe *pathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("$%s: %w", pe.path, pe.err)
		}
		return nil, err
	}
	return buf.Bytes(), nil
}

// pathError carries the location of an unencodable value up the recursion; the
// path is only built when something fails, keeping the hot path free of it.
type pathError struct {
	path string
	err  error
}

func (e *pathError) Error() string { return e.path + ": " + e.err.Error() }

func within(segment string, err error) error {
	var pe *pathError
	if errors.As(err, &pe) {
		return &pathError{path: segment + pe.path, err: pe.err}
	}
	return &pathError{path: segment, err: err}
}

func encodeValue(buf *bytes.Buffer, v any, style Style) error {
	switch t := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		if t {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case string:
		writeString(buf, t)
	case Number:
		s, err := t.literal()
		if err != nil {
			return err
		}
		buf.WriteString(s)
	case []any:
		buf.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				buf.WriteString(style.ItemSep)
			}
			if err := encodeValue(buf, e, style); err != nil {
				return within(fmt.Sprintf("[%d]", i), err)
			}
		}
		buf.WriteByte(']')
	case *Object:
		if t == nil {
			buf.WriteString("null")
			return nil
		}
		members := t.members
		if style.SortKeys {
			// Go compares strings bytewise, which for UTF-8 is code point order, the
			// order Python sorts str keys in.
			members = slices.SortedStableFunc(slices.Values(members), func(a, b Member) int {
				return strings.Compare(a.Key, b.Key)
			})
		}
		buf.WriteByte('{')
		for i, m := range members {
			if i > 0 {
				buf.WriteString(style.ItemSep)
			}
			writeString(buf, m.Key)
			buf.WriteString(style.KeySep)
			if err := encodeValue(buf, m.Value, style); err != nil {
				return within("."+m.Key, err)
			}
		}
		buf.WriteByte('}')
	default:
		return fmt.Errorf("unsupported value of type %T", v)
	}
	return nil
}

const hexDigits = "0123456789abcdef"

func writeString(buf *bytes.Buffer, s string) {
	buf.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			buf.WriteString(`\"`)
		case r == '\\':
			buf.WriteString(`\\`)
		case r == '\n':
			buf.WriteString(`\n`)
		case r == '\r':
			buf.WriteString(`\r`)
		case r == '\t':
			buf.WriteString(`\t`)
		case r == '\b':
			buf.WriteString(`\b`)
		case r == '\f':
			buf.WriteString(`\f`)
		case r >= 0x20 && r <= 0x7e:
			buf.WriteByte(byte(r))
		case r > 0xffff:
			r -= 0x10000
			writeU(buf, 0xd800+(r>>10))
			writeU(buf, 0xdc00+(r&0x3ff))
		default:
			// Invalid UTF-8 decodes as U+FFFD here; Go strings from JSON text are
			// already valid, so this only matters for values built in code.
			if r == utf8.RuneError {
				r = 0xfffd
			}
			writeU(buf, r)
		}
	}
	buf.WriteByte('"')
}

func writeU(buf *bytes.Buffer, r rune) {
	buf.WriteString(`\u`)
	buf.WriteByte(hexDigits[r>>12&0xf])
	buf.WriteByte(hexDigits[r>>8&0xf])
	buf.WriteByte(hexDigits[r>>4&0xf])
	buf.WriteByte(hexDigits[r&0xf])
}
