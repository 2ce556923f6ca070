package pyjson

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// Number is a JSON number that remembers whether it was an int or a float literal,
// the distinction Python keeps and the stable hash depends on. Ints are arbitrary
// precision like Python's. The zero value is the int 0. Numbers are immutable.
type Number struct {
	isFloat bool
	f       float64
	i       *big.Int // nil means 0; never mutated once stored
}

// Int returns the integer v.
func Int(v int64) Number { return Number{i: big.NewInt(v)} }

// Float returns the float v. It must be finite to be encoded.
func Float(v float64) Number { return Number{isFloat: true, f: v} }

// ParseNumber classifies a JSON number literal like Python's json module: a literal
// containing '.', 'e' or 'E' is a float, anything else an int.
func ParseNumber(lit string) (Number, error) {
	if strings.ContainsAny(lit, ".eE") {
		f, err := strconv.ParseFloat(lit, 64)
		if err != nil {
			// Python would read 1e400 as inf, which json.dumps then writes as the
			// non-JSON token Infinity; refuse it here instead.
			return Number{}, fmt.Errorf("number %s is not a finite float64", lit)
		}
		return Float(f), nil
	}
	i, ok := new(big.Int).SetString(lit, 10)
	if !ok {
		return Number{}, fmt.Errorf("invalid integer literal %q", lit)
	}
	return Number{i: i}, nil
}

// IsFloat reports whether n is a float (as opposed to an int).
func (n Number) IsFloat() bool { return n.isFloat }

// Int64 returns n as an int64 when n is an int that fits.
func (n Number) Int64() (int64, bool) {
	if n.isFloat {
		return 0, false
	}
	if n.i == nil {
		return 0, true
	}
	if !n.i.IsInt64() {
		return 0, false
	}
	return n.i.Int64(), true
}

// Float64 returns n converted like Python's float(n): ints round to nearest, ties
// to even. It fails for an int too large for a float64, as Python's does.
func (n Number) Float64() (float64, error) {
	if n.isFloat {
		return n.f, nil
	}
	if n.i == nil {
		return 0, nil
	}
	f, _ := new(big.Float).SetInt(n.i).Float64()
	if math.IsInf(f, 0) {
		return 0, fmt.Errorf("int %s too large to convert to float", n.i)
	}
	return f, nil
}

// String returns the literal Python's json.dumps would write.
func (n Number) String() string {
	s, err := n.literal()
	if err != nil {
		return fmt.Sprint(n.f)
	}
	return s
}

func (n Number) literal() (string, error) {
	if n.isFloat {
		return Repr(n.f)
	}
	if n.i == nil {
		return "0", nil
	}
	return n.i.String(), nil
}

func (n Number) bigInt() *big.Int {
	if n.i == nil {
		return new(big.Int)
	}
	return n.i
}

// Cmp compares a and b exactly, like Python's mixed int/float comparison (no
// rounding of a big int to float first). NaN never occurs: floats are kept finite.
func Cmp(a, b Number) int {
	switch {
	case !a.isFloat && !b.isFloat:
		return a.bigInt().Cmp(b.bigInt())
	case a.isFloat && b.isFloat:
		switch {
		case a.f < b.f:
			return -1
		case a.f > b.f:
			return 1
		}
		return 0
	}
	return exact(a).Cmp(exact(b))
}

func exact(n Number) *big.Float {
	if n.isFloat {
		return new(big.Float).SetFloat64(n.f)
	}
	return new(big.Float).SetInt(n.bigInt())
}

// Add returns a + b with Python semantics: int + int is an exact int, anything
// involving a float is a float. A non-finite float result is an error.
func Add(a, b Number) (Number, error) {
	return arith(a, b, "+", (*big.Int).Add, func(x, y float64) float64 { return x + y })
}

// Sub returns a - b with Python semantics (see Add).
func Sub(a, b Number) (Number, error) {
	return arith(a, b, "-", (*big.Int).Sub, func(x, y float64) float64 { return x - y })
}

// Mul returns a * b with Python semantics (see Add).
func Mul(a, b Number) (Number, error) {
	return arith(a, b, "*", (*big.Int).Mul, func(x, y float64) float64 { return x * y })
}

func arith(a, b Number, op string, ints func(z, x, y *big.Int) *big.Int, floats func(x, y float64) float64) (Number, error) {
	if !a.isFloat && !b.isFloat {
		return Number{i: ints(new(big.Int), a.bigInt(), b.bigInt())}, nil
	}
	x, err := a.Float64()
	if err != nil {
		return Number{}, err
	}
	y, err := b.Float64()
	if err != nil {
		return Number{}, err
	}
	r := floats(x, y)
	if math.IsInf(r, 0) || math.IsNaN(r) {
		return Number{}, fmt.Errorf("%s %s %s overflows float64", a, op, b)
	}
	return Float(r), nil
}

// Round2 is Python's round(n, 2): an int is returned unchanged, a float is rounded
// half-even on its exact binary value.
func Round2(n Number) Number {
	if !n.isFloat {
		return n
	}
	return Float(Round(n.f, 2))
}
