package pyjson

import (
	"math"
	"testing"
)

// Expected values were printed by CPython 3 (repr(x) and repr(round(x, 2))).
func TestRepr(t *testing.T) {
	cases := []struct {
		in   float64
		want string
	}{
		{300, "300.0"},
		{34.5, "34.5"},
		{89.99, "89.99"},
		{0, "0.0"},
		{math.Copysign(0, -1), "-0.0"},
		{1e16, "1e+16"},
		{1e15, "1000000000000000.0"},
		{9999999999999998.0, "9999999999999998.0"},
		{9007199254740992.0, "9007199254740992.0"},
		{12345678901234567.0, "1.2345678901234568e+16"},
		{123456789012345680.0, "1.2345678901234568e+17"},
		{1e-4, "0.0001"},
		{1e-5, "1e-05"},
		{1e-7, "1e-07"},
		{0.00015, "0.00015"},
		{2.5e-5, "2.5e-05"},
		{0.1, "0.1"},
		{1.0 / 3, "0.3333333333333333"},
		{1.5e300, "1.5e+300"},
		{1e100, "1e+100"},
		{1e21, "1e+21"},
		{5e-324, "5e-324"},
		{1.7976931348623157e308, "1.7976931348623157e+308"},
		{-394, "-394.0"},
		{-0.0008121693839740285, "-0.0008121693839740285"},
		{123456789.123, "123456789.123"},
	}
	for _, c := range cases {
		got, err := Repr(c.in)
		if err != nil {
			t.Fatalf("Repr(%v): %v", c.in, err)
		}
		if got != c.want {
			t.Errorf("Repr(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestReprRefusesNonFinite(t *testing.T) {
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if s, err := Repr(f); err == nil {
			t.Errorf("Repr(%v) = %q, want an error", f, s)
		}
	}
}

func TestRound(t *testing.T) {
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
		if got := Round(c.in, 2); got != c.want {
			t.Errorf("Round(%v, 2) = %v, want %v", c.in, got, c.want)
		}
	}
	if got := Round(-0.001, 2); got != 0 || !math.Signbit(got) {
		t.Errorf("Round(-0.001, 2) = %v, want -0.0", got)
	}
	if got := Round(math.Inf(1), 2); !math.IsInf(got, 1) {
		t.Errorf("Round(+Inf, 2) = %v, want +Inf", got)
	}
}
