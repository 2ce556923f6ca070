package canonical

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"unicode/utf8"
)

// DefaultMaxDepth bounds nesting in Parse. CPython's json.loads fails near its recursion
// limit of 1000, so nothing Python can produce and read back is refused.
const DefaultMaxDepth = 1000

// SyntaxError is a malformed document. Offset is the byte offset of the problem.
type SyntaxError struct {
	Offset int64
	Msg    string
	// Limit names the ParseOptions limit the document exceeded ("max_depth",
	// "max_number_digits"); empty for malformed JSON.
	Limit string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at offset %d: %s", e.Offset, e.Msg)
}

// ParseOptions tunes Parse.
type ParseOptions struct {
	// MaxDepth bounds array/object nesting; 0 means DefaultMaxDepth.
	MaxDepth int
	// KeepOrder makes every Object remember the order of its keys in the document, as
	// Python's json.loads does, for Dump without SortKeys. A repeated key keeps its
	// first position and its last value.
	KeepOrder bool
	// MaxNumberDigits bounds the digits of one number literal (integer, fraction and
	// exponent digits together); 0 means no bound. Converting a decimal literal of n
	// digits to a big.Int and back costs far more than linear time, so a service parsing
	// untrusted bodies sets it; CPython refuses int literals over 4300 digits by default.
	MaxNumberDigits int
}

// Parse decodes one JSON document (RFC 8259, UTF-8) into a Value, keeping the identity
// of number literals. NaN, Infinity, numbers beyond float64 range, raw control
// characters in strings, invalid UTF-8 and trailing data are errors (*SyntaxError).
func Parse(data []byte) (Value, error) { return ParseWith(data, ParseOptions{}) }

// ParseWith is Parse with options.
func ParseWith(data []byte, opts ParseOptions) (Value, error) {
	p := parser{data: data, maxDepth: opts.MaxDepth, keepOrder: opts.KeepOrder, maxDigits: opts.MaxNumberDigits}
	if p.maxDepth <= 0 {
		p.maxDepth = DefaultMaxDepth
	}
	p.skipSpace()
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos < len(p.data) {
		return nil, p.errAt(p.pos, "unexpected %s after the top-level value", describe(p.data[p.pos]))
	}
	return v, nil
}

type parser struct {
	data      []byte
	pos       int
	depth     int
	maxDepth  int
	maxDigits int // 0: unbounded
	// keepOrder builds ordered Objects (ParseOptions.KeepOrder).
	keepOrder bool
	// members is a stack shared by nested objects so each object allocates its member
	// slice once, at its exact size.
	members []Member
	values  []Value
}

func (p *parser) errAt(off int, format string, args ...any) error {
	return &SyntaxError{Offset: int64(off), Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) eof(what string) error {
	return p.errAt(len(p.data), "unexpected end of input, expected %s", what)
}

func describe(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return fmt.Sprintf("character %q", c)
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value() (Value, error) {
	if p.pos >= len(p.data) {
		return nil, p.eof("a value")
	}
	switch c := p.data[p.pos]; c {
	case '{':
		return p.object()
	case '[':
		return p.array()
	case '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return String(s), nil
	case 't':
		return p.literal("true", Bool(true))
	case 'f':
		return p.literal("false", Bool(false))
	case 'n':
		return p.literal("null", Null{})
	case 'N', 'I':
		return nil, p.errAt(p.pos, "NaN and Infinity are not allowed")
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			return p.number()
		}
		return nil, p.errAt(p.pos, "unexpected %s, expected a value", describe(c))
	}
}

func (p *parser) literal(word string, v Value) (Value, error) {
	end := p.pos + len(word)
	if end > len(p.data) || string(p.data[p.pos:end]) != word {
		return nil, p.errAt(p.pos, "invalid literal, expected %q", word)
	}
	p.pos = end
	return v, nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > p.maxDepth {
		err := p.errAt(p.pos, "nesting deeper than %d levels", p.maxDepth).(*SyntaxError)
		err.Limit = "max_depth"
		return err
	}
	return nil
}

func (p *parser) array() (Value, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	p.pos++ // '['
	base := len(p.values)
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		p.depth--
		return Array{}, nil
	}
	for {
		p.skipSpace()
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		p.values = append(p.values, v)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.eof("',' or ']' in array")
		}
		switch c := p.data[p.pos]; c {
		case ',':
			p.pos++
		case ']':
			p.pos++
			arr := make(Array, len(p.values)-base)
			copy(arr, p.values[base:])
			clear(p.values[base:])
			p.values = p.values[:base]
			p.depth--
			return arr, nil
		default:
			return nil, p.errAt(p.pos, "unexpected %s, expected ',' or ']' in array", describe(c))
		}
	}
}

func (p *parser) object() (Value, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	p.pos++ // '{'
	base := len(p.members)
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		p.depth--
		if p.keepOrder {
			return Object{order: emptyOrder}, nil
		}
		return Object{}, nil
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.eof("an object key")
		}
		if p.data[p.pos] != '"' {
			return nil, p.errAt(p.pos, "unexpected %s, expected a string object key", describe(p.data[p.pos]))
		}
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.eof("':' after object key")
		}
		if p.data[p.pos] != ':' {
			return nil, p.errAt(p.pos, "unexpected %s, expected ':' after object key", describe(p.data[p.pos]))
		}
		p.pos++
		p.skipSpace()
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		p.members = append(p.members, Member{Key: key, Value: v})
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.eof("',' or '}' in object")
		}
		switch c := p.data[p.pos]; c {
		case ',':
			p.pos++
		case '}':
			p.pos++
			ms := make([]Member, len(p.members)-base)
			copy(ms, p.members[base:])
			clear(p.members[base:])
			p.members = p.members[:base]
			p.depth--
			if p.keepOrder {
				return orderedObject(ms), nil
			}
			return Object{members: sortMembers(ms)}, nil
		default:
			return nil, p.errAt(p.pos, "unexpected %s, expected ',' or '}' in object", describe(c))
		}
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (p *parser) digits(what string) error {
	if p.pos >= len(p.data) {
		return p.eof(what)
	}
	if !isDigit(p.data[p.pos]) {
		return p.errAt(p.pos, "unexpected %s in number, expected %s", describe(p.data[p.pos]), what)
	}
	for p.pos < len(p.data) && isDigit(p.data[p.pos]) {
		p.pos++
	}
	return nil
}

func (p *parser) number() (Value, error) {
	start := p.pos
	if p.data[p.pos] == '-' {
		p.pos++
		if p.pos < len(p.data) && p.data[p.pos] == 'I' {
			return nil, p.errAt(start, "NaN and Infinity are not allowed")
		}
	}
	if p.pos < len(p.data) && p.data[p.pos] == '0' {
		p.pos++
	} else if err := p.digits("a digit"); err != nil {
		return nil, err
	}
	isFloat := false
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		p.pos++
		isFloat = true
		if err := p.digits("a digit after the decimal point"); err != nil {
			return nil, err
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		p.pos++
		isFloat = true
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if err := p.digits("a digit in the exponent"); err != nil {
			return nil, err
		}
	}
	if p.maxDigits > 0 {
		// Counted before any conversion, so an oversized literal costs one scan.
		digits := 0
		for _, c := range p.data[start:p.pos] {
			if isDigit(c) {
				digits++
			}
		}
		if digits > p.maxDigits {
			return nil, &SyntaxError{Offset: int64(start), Limit: "max_number_digits",
				Msg: fmt.Sprintf("number literal has %d digits, more than the limit of %d (max_number_digits)", digits, p.maxDigits)}
		}
	}
	lit := string(p.data[start:p.pos])
	if isFloat {
		f, err := strconv.ParseFloat(lit, 64)
		if err != nil || math.IsInf(f, 0) {
			return nil, p.errAt(start, "number %s is outside the float64 range", lit)
		}
		return Float(f), nil
	}
	return parseIntLiteral(lit, start, p)
}

func parseIntLiteral(lit string, start int, p *parser) (Value, error) {
	n, err := strconv.ParseInt(lit, 10, 64)
	if err == nil {
		return Int{small: n}, nil
	}
	if !errors.Is(err, strconv.ErrRange) {
		return nil, p.errAt(start, "invalid number %s", lit)
	}
	b, ok := new(big.Int).SetString(lit, 10)
	if !ok {
		return nil, p.errAt(start, "invalid number %s", lit)
	}
	return Int{big: b}, nil
}

// str reads a string literal starting at the opening quote.
func (p *parser) str() (string, error) {
	open := p.pos
	i := open + 1
	ascii := true
	// Fast path: no escapes.
	for ; i < len(p.data); i++ {
		c := p.data[i]
		if c == '"' {
			raw := p.data[open+1 : i]
			if !ascii {
				if err := p.checkUTF8(raw, open+1); err != nil {
					return "", err
				}
			}
			p.pos = i + 1
			return string(raw), nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return "", p.errAt(i, "control character 0x%02x in string must be escaped", c)
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	if i >= len(p.data) {
		return "", p.errAt(open, "unterminated string")
	}
	if !ascii {
		if err := p.checkUTF8(p.data[open+1:i], open+1); err != nil {
			return "", err
		}
	}
	buf := make([]byte, 0, i-open+16)
	buf = append(buf, p.data[open+1:i]...)
	for i < len(p.data) {
		c := p.data[i]
		switch {
		case c == '"':
			p.pos = i + 1
			return string(buf), nil
		case c == '\\':
			var err error
			buf, i, err = p.escape(buf, i)
			if err != nil {
				return "", err
			}
		case c < 0x20:
			return "", p.errAt(i, "control character 0x%02x in string must be escaped", c)
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			i++
		default:
			r, size := utf8.DecodeRune(p.data[i:])
			if r == utf8.RuneError && size <= 1 {
				return "", p.errAt(i, "invalid UTF-8 byte 0x%02x in string", c)
			}
			buf = append(buf, p.data[i:i+size]...)
			i += size
		}
	}
	return "", p.errAt(open, "unterminated string")
}

func (p *parser) checkUTF8(b []byte, off int) error {
	if utf8.Valid(b) {
		return nil
	}
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return p.errAt(off+i, "invalid UTF-8 byte 0x%02x in string", b[i])
		}
		i += size
	}
	return nil
}

// escape decodes the escape sequence at data[i] (a backslash) and returns the new
// read position.
func (p *parser) escape(buf []byte, i int) ([]byte, int, error) {
	if i+1 >= len(p.data) {
		return nil, 0, p.eof("an escape sequence")
	}
	switch c := p.data[i+1]; c {
	case '"', '\\', '/':
		return append(buf, c), i + 2, nil
	case 'b':
		return append(buf, '\b'), i + 2, nil
	case 'f':
		return append(buf, '\f'), i + 2, nil
	case 'n':
		return append(buf, '\n'), i + 2, nil
	case 'r':
		return append(buf, '\r'), i + 2, nil
	case 't':
		return append(buf, '\t'), i + 2, nil
	case 'u':
		r, err := p.hex4(i)
		if err != nil {
			return nil, 0, err
		}
		i += 6
		if r >= 0xd800 && r < 0xdc00 && i+6 <= len(p.data) && p.data[i] == '\\' && p.data[i+1] == 'u' {
			if lo, err := p.hex4(i); err == nil && lo >= 0xdc00 && lo <= 0xdfff {
				return utf8.AppendRune(buf, 0x10000+(r-0xd800)<<10+(lo-0xdc00)), i + 6, nil
			}
		}
		// A lone surrogate stays, as in Python.
		return appendWTF8(buf, r), i, nil
	default:
		return nil, 0, p.errAt(i, "invalid escape sequence: backslash followed by %s in string", describe(c))
	}
}

func (p *parser) hex4(i int) (rune, error) {
	if i+6 > len(p.data) {
		return 0, p.errAt(i, "truncated \\u escape in string")
	}
	var r rune
	for _, c := range p.data[i+2 : i+6] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, p.errAt(i, "invalid \\u escape %q in string", p.data[i:i+6])
		}
	}
	return r, nil
}
