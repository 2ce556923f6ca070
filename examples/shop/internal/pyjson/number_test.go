package pyjson

import (
	"math"
	"strings"
	"testing"
)

func mustNum(t *testing.T, lit string) Number {
	t.Helper()
	n, err := ParseNumber(lit)
	if err != nil {
		t.Fatalf("ParseNumber(%q): %v", lit, err)
	}
	return n
}

func TestParseNumberKeepsKind(t *testing.T) {
	cases := []struct {
		lit     string
		isFloat bool
		out     string
	}{
		{"300.00", true, "300.0"},
		{"34.50", true, "34.5"},
		{"42", false, "42"},
		{"-0", false, "0"},
		{"-0.0", true, "-0.0"},
		{"1E2", true, "100.0"},
		{"1e16", true, "1e+16"},
		{"1e-5", true, "1e-05"},
		{"-29972414624856714363", false, "-29972414624856714363"},
	}
	for _, c := range cases {
		n := mustNum(t, c.lit)
		if n.IsFloat() != c.isFloat || n.String() != c.out {
			t.Errorf("ParseNumber(%q) = float:%v %q, want float:%v %q", c.lit, n.IsFloat(), n, c.isFloat, c.out)
		}
	}
}

func TestParseNumberErrors(t *testing.T) {
	cases := map[string]string{
		"1e400":  "number 1e400 is not a finite float64",
		"-1e999": "number -1e999 is not a finite float64",
		"12a":    `invalid integer literal "12a"`,
	}
	for lit, want := range cases {
		_, err := ParseNumber(lit)
		if err == nil || err.Error() != want {
			t.Errorf("ParseNumber(%q) error = %v, want %q", lit, err, want)
		}
	}
}

func TestArithmeticFollowsPython(t *testing.T) {
	type op func(a, b Number) (Number, error)
	cases := []struct {
		name string
		f    op
		a, b string
		want string // literal of the result
	}{
		{"int+int", Add, "2", "3", "5"},
		{"int+float", Add, "2", "3.0", "5.0"},
		{"float-float", Sub, "300.0", "158.99", "141.01"},
		{"int-int", Sub, "42", "1", "41"},
		{"float*int", Mul, "34.5", "2", "69.0"},
		{"bigint*int", Mul, "99999999999999999999", "3", "299999999999999999997"},
		{"bigint*float", Mul, "99999999999999999999", "1.0", "1e+20"},
		{"float+float", Add, "0.1", "0.2", "0.30000000000000004"},
	}
	for _, c := range cases {
		got, err := c.f(mustNum(t, c.a), mustNum(t, c.b))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got.String() != c.want {
			t.Errorf("%s(%s, %s) = %s, want %s", c.name, c.a, c.b, got, c.want)
		}
	}
}

func TestArithmeticOverflowIsAnError(t *testing.T) {
	_, err := Mul(Float(1e308), Int(10))
	if err == nil || err.Error() != "1e+308 * 10 overflows float64" {
		t.Fatalf("Mul(1e308, 10) error = %v", err)
	}
	huge := mustNum(t, "1"+strings.Repeat("0", 400))
	_, err = Add(huge, Float(1))
	if err == nil || !strings.Contains(err.Error(), "too large to convert to float") {
		t.Fatalf("Add(10**400, 1.0) error = %v", err)
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
	}
	for _, c := range cases {
		if got := Cmp(mustNum(t, c.a), mustNum(t, c.b)); got != c.want {
			t.Errorf("Cmp(%s, %s) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestRound2(t *testing.T) {
	if got := Round2(Float(2.675)); got.String() != "2.67" || !got.IsFloat() {
		t.Errorf("Round2(2.675) = %v", got)
	}
	if got := Round2(Int(7)); got.String() != "7" || got.IsFloat() {
		t.Errorf("Round2(7) = %v, want the int 7 (Python round(int, 2) is an int)", got)
	}
}

func TestNumberConversions(t *testing.T) {
	if v, ok := mustNum(t, "41").Int64(); !ok || v != 41 {
		t.Errorf("Int64(41) = %d, %v", v, ok)
	}
	if _, ok := mustNum(t, "41.0").Int64(); ok {
		t.Error("Int64(41.0) succeeded on a float")
	}
	if _, ok := mustNum(t, "99999999999999999999").Int64(); ok {
		t.Error("Int64 succeeded on an int beyond int64")
	}
	if f, err := mustNum(t, "9007199254740993").Float64(); err != nil || f != 9007199254740992 {
		t.Errorf("Float64(2**53+1) = %v, %v; want round-half-even 9007199254740992", f, err)
	}
	if f, err := (Number{}).Float64(); err != nil || f != 0 || math.Signbit(f) {
		t.Errorf("zero Number Float64 = %v, %v", f, err)
	}
}
