package shop

import (
	"fmt"
	"math"
	"math/big"
	"strconv"

	"tolokaforge.io/operator/api/canonical"
)

// The shop's arithmetic follows Python's on canonical.Int (Python int, exact, any size)
// and canonical.Float (Python float): int op int is an int, anything involving a float
// is a float, and round(x, 2) rounds the exact binary value half to even. This is
// domain logic of the example server, so it lives here and not in api/canonical,
// which only reads and writes numbers.

// isNumber reports whether v is an Int or a Float.
func isNumber(v canonical.Value) bool {
	k := canonical.KindOf(v)
	return k == canonical.KindInt || k == canonical.KindFloat
}

// numString is the literal json.dumps writes for n, for messages.
func numString(n canonical.Value) string { return string(canonical.Marshal(n)) }

// cmpNumbers compares two numbers exactly, like Python's mixed int/float comparison
// (a big int is not rounded to a float first). The shop keeps its floats finite, so
// NaN never occurs.
func cmpNumbers(a, b canonical.Value) int {
	switch x := a.(type) {
	case canonical.Int:
		if y, ok := b.(canonical.Int); ok {
			xs, xok := x.Int64()
			ys, yok := y.Int64()
			if xok && yok {
				return cmpOrdered(xs, ys)
			}
			return x.Big().Cmp(y.Big())
		}
	case canonical.Float:
		if y, ok := b.(canonical.Float); ok {
			return cmpOrdered(float64(x), float64(y))
		}
	}
	return exact(a).Cmp(exact(b))
}

func cmpOrdered[T int64 | float64](x, y T) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// exact returns a finite number as a big.Float holding its exact value.
func exact(n canonical.Value) *big.Float {
	if f, ok := n.(canonical.Float); ok {
		return new(big.Float).SetFloat64(float64(f))
	}
	// SetInt picks a precision that holds every bit of the int.
	return new(big.Float).SetInt(n.(canonical.Int).Big())
}

// toFloat converts n like Python's float(n): an int rounds to nearest, ties to even,
// and one too large for a float64 is an error, as in Python.
func toFloat(n canonical.Value) (float64, error) {
	switch x := n.(type) {
	case canonical.Float:
		return float64(x), nil
	case canonical.Int:
		if i, ok := x.Int64(); ok && i > -1<<53 && i < 1<<53 {
			return float64(i), nil
		}
		f, _ := new(big.Float).SetInt(x.Big()).Float64()
		if math.IsInf(f, 0) {
			return 0, fmt.Errorf("int %s too large to convert to float", x)
		}
		return f, nil
	}
	return 0, fmt.Errorf("%s is not a number", canonical.KindOf(n))
}

// add returns a + b with Python semantics; a non-finite float result is an error.
func add(a, b canonical.Value) (canonical.Value, error) {
	return arith(a, b, "+", (*big.Int).Add, func(x, y float64) float64 { return x + y })
}

// sub returns a - b with Python semantics (see add).
func sub(a, b canonical.Value) (canonical.Value, error) {
	return arith(a, b, "-", (*big.Int).Sub, func(x, y float64) float64 { return x - y })
}

// mul returns a * b with Python semantics (see add).
func mul(a, b canonical.Value) (canonical.Value, error) {
	return arith(a, b, "*", (*big.Int).Mul, func(x, y float64) float64 { return x * y })
}

func arith(a, b canonical.Value, op string, ints func(z, x, y *big.Int) *big.Int, floats func(x, y float64) float64) (canonical.Value, error) {
	x, xInt := a.(canonical.Int)
	y, yInt := b.(canonical.Int)
	if xInt && yInt {
		return canonical.NewBigInt(ints(new(big.Int), x.Big(), y.Big())), nil
	}
	fx, err := toFloat(a)
	if err != nil {
		return nil, err
	}
	fy, err := toFloat(b)
	if err != nil {
		return nil, err
	}
	r := floats(fx, fy)
	if math.IsInf(r, 0) || math.IsNaN(r) {
		return nil, fmt.Errorf("%s %s %s overflows float64", numString(a), op, numString(b))
	}
	return canonical.Float(r), nil
}

// round2 is Python's round(n, 2): an int is returned unchanged, a float is rounded
// half-even on its exact binary value.
func round2(n canonical.Value) canonical.Value {
	if f, ok := n.(canonical.Float); ok {
		return canonical.Float(roundFloat(float64(f), 2))
	}
	return n
}

// roundFloat is Python's round(x, ndigits) for a float: the exact binary value of x is
// rounded to ndigits decimals, ties to even, and the result is the float nearest to
// that decimal. So 2.675 (really 2.67499999...) gives 2.67 and the exact tie 0.125
// gives 0.12; math.Round-based tricks (x*100) get these wrong.
func roundFloat(x float64, ndigits int) float64 {
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
