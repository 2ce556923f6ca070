package shop

import (
	"math"
	"strings"
	"testing"

	"tolokaforge.io/operator/api/canonical"
)

func mustNum(t *testing.T, lit string) canonical.Value {
	t.Helper()
	n, err := canonical.Parse([]byte(lit))
	if err != nil || !isNumber(n) {
		t.Fatalf("Parse(%q) = %v, %v; want a number", lit, n, err)
	}
	return n
}

// Expected values were printed by CPython 3 (repr(round(x, 2))).
func TestRoundFloat(t *testing.T) {
	cases := []struct {
		in, want float64
	}{
		{2.675, 2.67},   // binary value is 2.67499999...
		{0.125, 0.12},   // exact tie: to even
		{0.375, 0.38},   // exact tie: to even
		{-2.675, -2.67}, // sign symmetric
		{-0.125, -0.12},
		{1.005, 1.0},
		{0.005, 0.01},
		{0.015, 0.01},
		{0.025, 0.03},
		{0.035, 0.04},
		{0.045, 0.04},
		{0.285, 0.28},
		{1.115, 1.11},
		{2.345, 2.35},
		{1234567.125, 1234567.12},
		{1.23456789e-7, 0},
		{5e-324, 0},
		{1e300, 1e300},
		{1e22 + 0.5, 1e22},
		{4503599627370495.5, 4503599627370495.5},
		{89.99 + 34.5*2, 158.99},
		{300 - 158.99, 141.01},
	}
	for _, c := range cases {
		if got := roundFloat(c.in, 2); got != c.want {
			t.Errorf("roundFloat(%v, 2) = %v, want %v", c.in, got, c.want)
		}
	}
	if got := roundFloat(-0.001, 2); got != 0 || !math.Signbit(got) {
		t.Errorf("roundFloat(-0.001, 2) = %v, want -0.0", got)
	}
	if got := roundFloat(math.Inf(1), 2); !math.IsInf(got, 1) {
		t.Errorf("roundFloat(+Inf, 2) = %v, want +Inf", got)
	}
}

func TestArithmeticFollowsPython(t *testing.T) {
	type op func(a, b canonical.Value) (canonical.Value, error)
	cases := []struct {
		name string
		f    op
		a, b string
		want string // literal of the result
	}{
		{"int+int", add, "2", "3", "5"},
		{"int+float", add, "2", "3.0", "5.0"},
		{"float-float", sub, "300.0", "158.99", "141.01"},
		{"int-int", sub, "42", "1", "41"},
		{"float*int", mul, "34.5", "2", "69.0"},
		{"bigint*int", mul, "99999999999999999999", "3", "299999999999999999997"},
		{"bigint*float", mul, "99999999999999999999", "1.0", "1e+20"},
		{"float+float", add, "0.1", "0.2", "0.30000000000000004"},
		{"int64 overflow stays exact", add, "9223372036854775807", "1", "9223372036854775808"},
		{"big int back to int64", sub, "9223372036854775808", "1", "9223372036854775807"},
	}
	for _, c := range cases {
		got, err := c.f(mustNum(t, c.a), mustNum(t, c.b))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if numString(got) != c.want {
			t.Errorf("%s(%s, %s) = %s, want %s", c.name, c.a, c.b, numString(got), c.want)
		}
	}
}

func TestArithmeticOverflowIsAnError(t *testing.T) {
	_, err := mul(canonical.Float(1e308), canonical.NewInt(10))
	if err == nil || err.Error() != "1e+308 * 10 overflows float64" {
		t.Fatalf("mul(1e308, 10) error = %v", err)
	}
	huge := mustNum(t, "1"+strings.Repeat("0", 400))
	_, err = add(huge, canonical.Float(1))
	if err == nil || !strings.Contains(err.Error(), "too large to convert to float") {
		t.Fatalf("add(10**400, 1.0) error = %v", err)
	}
	if _, err := add(canonical.String("1"), canonical.NewInt(1)); err == nil || err.Error() != "string is not a number" {
		t.Fatalf(`add("1", 1) error = %v`, err)
	}
}

func TestCmpIsExactAcrossKinds(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"1", "1.0", 0},
		{"2", "1.5", 1},
		{"1.5", "2", -1},
		{"9007199254740993", "9007199254740992.0", 1}, // 2**53+1 vs float 2**53: Python says >
		{"158.99", "158.99", 0},
		{"141.01", "300.0", -1},
		{"-0.0", "0", 0},
		{"100000000000000000000000", "99999999999999999999999", 1},
		{"-100000000000000000000000", "3", -1},
		{"1e300", "100000000000000000000000", 1},
	}
	for _, c := range cases {
		if got := cmpNumbers(mustNum(t, c.a), mustNum(t, c.b)); got != c.want {
			t.Errorf("cmpNumbers(%s, %s) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := cmpNumbers(mustNum(t, c.b), mustNum(t, c.a)); got != -c.want {
			t.Errorf("cmpNumbers(%s, %s) = %d, want %d", c.b, c.a, got, -c.want)
		}
	}
}

func TestRound2(t *testing.T) {
	if got := round2(canonical.Float(2.675)); numString(got) != "2.67" || got.Kind() != canonical.KindFloat {
		t.Errorf("round2(2.675) = %s %s", got.Kind(), numString(got))
	}
	if got := round2(canonical.NewInt(7)); numString(got) != "7" || got.Kind() != canonical.KindInt {
		t.Errorf("round2(7) = %s %s, want the int 7 (Python round(int, 2) is an int)", got.Kind(), numString(got))
	}
}

// toFloat is Python's float(n).
func TestToFloat(t *testing.T) {
	cases := []struct {
		lit  string
		want float64
	}{
		{"41", 41},
		{"41.5", 41.5},
		{"-0.0", math.Copysign(0, -1)},
		{"9007199254740993", 9007199254740992},           // 2**53+1: round half to even
		{"9007199254740995", 9007199254740996},           // 2**53+3: round half to even
		{"99999999999999999999", 1e20},                   // beyond int64
		{"-9223372036854775808", -9223372036854775808.0}, // int64 minimum
	}
	for _, c := range cases {
		got, err := toFloat(mustNum(t, c.lit))
		if err != nil || got != c.want || math.Signbit(got) != math.Signbit(c.want) {
			t.Errorf("toFloat(%s) = %v, %v; want %v", c.lit, got, err, c.want)
		}
	}
}
