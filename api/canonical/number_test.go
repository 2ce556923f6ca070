package canonical

import (
	"math"
	"testing"
)

// Expected values were printed by CPython 3 (repr(x)), which json.dumps writes for
// floats.
func TestFloatRepr(t *testing.T) {
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
		for _, opts := range []DumpOptions{{}, {Compact: true, SortKeys: true}} {
			if got := string(Dump(Float(c.in), opts)); got != c.want {
				t.Errorf("Dump(%v, %+v) = %q, want %q", c.in, opts, got, c.want)
			}
		}
		if got := string(Marshal(Array{Float(c.in)})); got != "["+c.want+"]" {
			t.Errorf("Marshal([%v]) = %q, want [%s]", c.in, got, c.want)
		}
	}
}

// Python's json.dumps (allow_nan=True) writes the non-finite floats as these tokens;
// Parse refuses them, so they only come from Values built in Go, and a Float cannot be
// handed to encoding/json that way.
func TestFloatReprNonFinite(t *testing.T) {
	cases := []struct {
		in   float64
		want string
	}{
		{math.NaN(), "NaN"},
		{math.Inf(1), "Infinity"},
		{math.Inf(-1), "-Infinity"},
	}
	for _, c := range cases {
		if got := string(Marshal(Float(c.in))); got != c.want {
			t.Errorf("Marshal(%v) = %q, want %q", c.in, got, c.want)
		}
		if b, err := Float(c.in).MarshalJSON(); err == nil {
			t.Errorf("Float(%v).MarshalJSON() = %s, want an error", c.in, b)
		}
		if _, err := Parse([]byte(c.want)); err == nil {
			t.Errorf("Parse(%s) succeeded", c.want)
		}
	}
}

// A literal with '.', 'e' or 'E' is a Python float, anything else a Python int of any
// size, and each is written back in Python's form.
func TestParseKeepsNumberKind(t *testing.T) {
	cases := []struct {
		lit  string
		kind Kind
		out  string
	}{
		{"300.00", KindFloat, "300.0"},
		{"34.50", KindFloat, "34.5"},
		{"42", KindInt, "42"},
		{"-0", KindInt, "0"},
		{"-0.0", KindFloat, "-0.0"},
		{"1E2", KindFloat, "100.0"},
		{"1e16", KindFloat, "1e+16"},
		{"1e-5", KindFloat, "1e-05"},
		{"-29972414624856714363", KindInt, "-29972414624856714363"},
	}
	for _, c := range cases {
		v, err := ParseWith([]byte(c.lit), ParseOptions{KeepOrder: true})
		if err != nil {
			t.Errorf("Parse(%q): %v", c.lit, err)
			continue
		}
		if v.Kind() != c.kind || string(Dump(v, DumpOptions{})) != c.out {
			t.Errorf("Parse(%q) = %s %s, want %s %s", c.lit, v.Kind(), Dump(v, DumpOptions{}), c.kind, c.out)
		}
	}
}

// Python's json.loads reads 1e400 as inf, which json.dumps then writes as the
// non-JSON token Infinity; Parse refuses it instead.
func TestParseNumberLiteralErrors(t *testing.T) {
	cases := map[string]string{
		"1e400":  "invalid JSON at offset 0: number 1e400 is outside the float64 range",
		"-1e999": "invalid JSON at offset 0: number -1e999 is outside the float64 range",
		"12a":    "invalid JSON at offset 2: unexpected character 'a' after the top-level value",
		"1.":     "invalid JSON at offset 2: unexpected end of input, expected a digit after the decimal point",
	}
	for lit, want := range cases {
		_, err := Parse([]byte(lit))
		if err == nil || err.Error() != want {
			t.Errorf("Parse(%q) error = %v, want %q", lit, err, want)
		}
	}
}
