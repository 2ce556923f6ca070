package pyjson

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Repr formats f exactly like Python's repr(float): the shortest digits that round
// trip, a ".0" on integral values, and exponent notation (at least two exponent
// digits, explicit sign) when the decimal exponent is below -4 or above 16.
// Non-finite values have no JSON form and are an error.
func Repr(f float64) (string, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", fmt.Errorf("float %v has no JSON representation", f)
	}
	// Go's shortest formatting picks the same digits as Python's (both produce the
	// shortest round-tripping string closest to the exact value); only the layout
	// differs.
	s := strconv.FormatFloat(f, 'e', -1, 64)
	var b strings.Builder
	if s[0] == '-' {
		b.WriteByte('-')
		s = s[1:]
	}
	mant, expStr, _ := strings.Cut(s, "e")
	digits := strings.Replace(mant, ".", "", 1)
	exp, err := strconv.Atoi(expStr)
	if err != nil {
		return "", fmt.Errorf("format float %v: %w", f, err)
	}
	decpt := exp + 1 // digits are 0.d1d2... × 10^decpt
	switch {
	case decpt <= -4 || decpt > 16:
		b.WriteByte(digits[0])
		if len(digits) > 1 {
			b.WriteByte('.')
			b.WriteString(digits[1:])
		}
		b.WriteByte('e')
		if exp < 0 {
			b.WriteByte('-')
			exp = -exp
		} else {
			b.WriteByte('+')
		}
		if exp < 10 {
			b.WriteByte('0')
		}
		b.WriteString(strconv.Itoa(exp))
	case decpt <= 0:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", -decpt))
		b.WriteString(digits)
	case decpt >= len(digits):
		b.WriteString(digits)
		b.WriteString(strings.Repeat("0", decpt-len(digits)))
		b.WriteString(".0")
	default:
		b.WriteString(digits[:decpt])
		b.WriteByte('.')
		b.WriteString(digits[decpt:])
	}
	return b.String(), nil
}

// Round is Python's round(x, ndigits) for a float: the exact binary value of x is
// rounded to ndigits decimals, ties to even, and the result is the float nearest to
// that decimal. So 2.675 (really 2.67499999...) gives 2.67 and the exact tie 0.125
// gives 0.12. math.Round-based tricks (x*100) get these wrong.
func Round(x float64, ndigits int) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) || ndigits < 0 {
		return x
	}
	// strconv's fixed-precision 'f' formatting converts the exact binary value and
	// rounds half-even, which is what Python's dtoa mode 3 does.
	r, err := strconv.ParseFloat(strconv.FormatFloat(x, 'f', ndigits, 64), 64)
	if err != nil {
		return x
	}
	return r
}
