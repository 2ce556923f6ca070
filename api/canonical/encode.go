package canonical

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math"
	"strconv"
	"sync"
	"unicode/utf8"
)

// Marshal returns the canonical bytes of v.
func Marshal(v Value) []byte { return Append(nil, v) }

// Append appends the canonical bytes of v to dst.
func Append(dst []byte, v Value) []byte {
	e := encoder{buf: dst}
	e.value(v)
	return e.buf
}

// writeTo streams the canonical bytes of v to w through a small buffer, so a large
// state is never held as one byte slice.
func writeTo(w io.Writer, v Value) error {
	// The buffer is pooled: a fresh 64 KiB per call made hashing small tables
	// (every MCP write-back, every grade) the largest allocator of a trial.
	bp := streamBufs.Get().(*[]byte)
	e := encoder{buf: (*bp)[:0], sink: w}
	e.value(v)
	e.flush()
	if cap(e.buf) <= 4*flushAt {
		// A buffer a huge string grew is dropped rather than kept alive.
		*bp = e.buf[:0]
		streamBufs.Put(bp)
	}
	return e.err
}

var streamBufs = sync.Pool{New: func() any {
	b := make([]byte, 0, 2*flushAt)
	return &b
}}

// sum returns the sha256 of v's canonical bytes.
func sum(v Value) [sha256.Size]byte {
	h := sha256.New()
	// Writes to a hash never fail.
	_ = writeTo(h, v)
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// Hash returns the canonical hash of v: the lowercase hex sha256 of its canonical bytes.
func Hash(v Value) string {
	s := sum(v)
	return hex.EncodeToString(s[:])
}

// HashJSON parses a JSON document and returns its canonical hash.
func HashJSON(data []byte) (string, error) {
	v, err := Parse(data)
	if err != nil {
		return "", err
	}
	return Hash(v), nil
}

// Canonicalize parses a JSON document and returns its canonical bytes.
func Canonicalize(data []byte) ([]byte, error) {
	v, err := Parse(data)
	if err != nil {
		return nil, err
	}
	return Marshal(v), nil
}

// flushAt is the buffered size at which a streaming encoder hands bytes to its sink.
const flushAt = 32 << 10

type encoder struct {
	buf  []byte
	sink io.Writer // nil: accumulate everything in buf
	err  error
	// spaced and inOrder select json.dumps' other layouts (Dump); false and false is
	// the canonical form.
	spaced  bool // ", " and ": " instead of "," and ":"
	inOrder bool // objects in insertion order instead of key order
}

func (e *encoder) itemSep() {
	if e.spaced {
		e.buf = append(e.buf, ',', ' ')
	} else {
		e.buf = append(e.buf, ',')
	}
}

func (e *encoder) keySep() {
	if e.spaced {
		e.buf = append(e.buf, ':', ' ')
	} else {
		e.buf = append(e.buf, ':')
	}
}

func (e *encoder) flush() {
	if e.sink != nil && len(e.buf) > 0 && e.err == nil {
		_, e.err = e.sink.Write(e.buf)
		e.buf = e.buf[:0]
	}
}

func (e *encoder) value(v Value) {
	switch x := v.(type) {
	case nil, Null:
		e.buf = append(e.buf, "null"...)
	case Bool:
		if x {
			e.buf = append(e.buf, "true"...)
		} else {
			e.buf = append(e.buf, "false"...)
		}
	case Int:
		e.buf = appendInt(e.buf, x)
	case Float:
		e.buf = appendFloat(e.buf, float64(x))
	case String:
		e.buf = AppendString(e.buf, string(x))
	case Array:
		e.buf = append(e.buf, '[')
		for i, el := range x {
			if i > 0 {
				e.itemSep()
			}
			e.value(el)
			if len(e.buf) >= flushAt {
				e.flush()
			}
		}
		e.buf = append(e.buf, ']')
	case Object:
		e.buf = append(e.buf, '{')
		for i := range x.members {
			m := &x.members[i]
			if e.inOrder {
				m = x.inOrderAt(i)
			}
			if i > 0 {
				e.itemSep()
			}
			e.buf = AppendString(e.buf, m.Key)
			e.keySep()
			e.value(m.Value)
			if len(e.buf) >= flushAt {
				e.flush()
			}
		}
		e.buf = append(e.buf, '}')
	}
}

func appendInt(dst []byte, i Int) []byte {
	if i.big != nil {
		return i.big.Append(dst, 10)
	}
	return strconv.AppendInt(dst, i.small, 10)
}

// appendFloat writes f as Python's float repr: the shortest digits that round-trip,
// positional when the decimal exponent is in [-4, 16), otherwise d.ddde±XX.
func appendFloat(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	case f == 0:
		if math.Signbit(f) {
			return append(dst, "-0.0"...)
		}
		return append(dst, "0.0"...)
	}
	var buf [32]byte
	// 'e' with precision -1 yields the shortest round-trip digits as d.ddde±XX, and Go
	// already pads the exponent to two digits the way Python does.
	sci := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	mant, exp := splitExp(sci)
	if exp < -4 || exp >= 16 {
		return append(dst, sci...)
	}
	neg := mant[0] == '-'
	if neg {
		dst = append(dst, '-')
		mant = mant[1:]
	}
	// Gather the significant digits without the point.
	var digitsBuf [24]byte
	digits := append(digitsBuf[:0], mant[0])
	if len(mant) > 2 {
		digits = append(digits, mant[2:]...)
	}
	if exp < 0 {
		dst = append(dst, '0', '.')
		for i := -1; i > exp; i-- {
			dst = append(dst, '0')
		}
		return append(dst, digits...)
	}
	intLen := exp + 1
	if len(digits) <= intLen {
		dst = append(dst, digits...)
		for i := len(digits); i < intLen; i++ {
			dst = append(dst, '0')
		}
		return append(dst, '.', '0')
	}
	dst = append(dst, digits[:intLen]...)
	dst = append(dst, '.')
	return append(dst, digits[intLen:]...)
}

// splitExp splits strconv's 'e' output into mantissa and decimal exponent.
func splitExp(sci []byte) ([]byte, int) {
	for i := len(sci) - 1; i >= 0; i-- {
		if sci[i] == 'e' {
			exp, _ := strconv.Atoi(string(sci[i+1:]))
			return sci[:i], exp
		}
	}
	return sci, 0
}

const hexDigits = "0123456789abcdef"

// safeASCII marks the bytes Python's ensure_ascii writes unchanged: printable ASCII
// except '"' and '\\'.
var safeASCII = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// AppendString appends s as a canonical JSON string literal.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if safeASCII[c] {
			i++
			continue
		}
		dst = append(dst, s[start:i]...)
		if c < utf8.RuneSelf {
			switch c {
			case '"':
				dst = append(dst, '\\', '"')
			case '\\':
				dst = append(dst, '\\', '\\')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = appendU(dst, rune(c))
			}
			i++
			start = i
			continue
		}
		r, size := decodeWTF8(s[i:])
		if r >= 0x10000 {
			r -= 0x10000
			dst = appendU(dst, 0xd800+(r>>10))
			dst = appendU(dst, 0xdc00+(r&0x3ff))
		} else {
			dst = appendU(dst, r)
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

func appendU(dst []byte, r rune) []byte {
	return append(dst, '\\', 'u',
		hexDigits[(r>>12)&0xf], hexDigits[(r>>8)&0xf], hexDigits[(r>>4)&0xf], hexDigits[r&0xf])
}

// decodeWTF8 decodes one code point, accepting the 3-byte encoding of a surrogate that
// Parse uses for lone surrogates. Bytes that are not UTF-8 at all decode as U+FFFD.
func decodeWTF8(s string) (rune, int) {
	r, size := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && size == 1 && len(s) >= 3 && s[0] == 0xed &&
		s[1] >= 0xa0 && s[1] <= 0xbf && s[2] >= 0x80 && s[2] <= 0xbf {
		return rune(s[0]&0x0f)<<12 | rune(s[1]&0x3f)<<6 | rune(s[2]&0x3f), 3
	}
	return r, size
}

// appendWTF8 encodes r, which may be a surrogate, as UTF-8 or its 3-byte WTF-8 form.
func appendWTF8(dst []byte, r rune) []byte {
	if r >= 0xd800 && r <= 0xdfff {
		return append(dst, byte(0xe0|r>>12), byte(0x80|(r>>6)&0x3f), byte(0x80|r&0x3f))
	}
	return utf8.AppendRune(dst, r)
}
