package builtin_test

import (
	"strings"
	"testing"

	"tolokaforge.io/operator/runner/tools/builtin"
)

func TestCalculate(t *testing.T) {
	cases := []struct{ expr, want string }{
		{"1 + 2", "3"},
		{"2 + 3 * 4", "14"},
		{"(2 + 3) * 4", "20"},
		{"7 / 2", "3.5"},
		{"6 / 3", "2.0"},
		{"7 % 3", "1"},
		{"-7 % 3", "2"}, // Python: the divisor's sign
		{"7 % -3", "-2"},
		{"-7.5 % 2", "0.5"},
		{"2 ** 10", "1024"},
		{"2 ^ 10", "1024"},
		{"2 ** 3 ** 2", "512"}, // right-associative
		{"-2 ** 2", "-4"},      // ** binds tighter than unary minus on its left
		{"2 ** -1", "0.5"},
		{"2 * 3 ** 2", "18"},
		{"(-8) ** 2", "64"},
		{"--3", "3"},
		{"+4", "4"},
		{"89.99 + 2 * 34.5", "158.99"},
		{"0.1 + 0.2", "0.30000000000000004"},
		{"300.00 - 158.99", "141.01"},
		{"1e16", "1e+16"},
		{"1e-5 * 1", "1e-05"},
		{"2 ** 100", "1267650600228229401496703205376"},
		{"10 - 2 - 3", "5"},
		{"100 / 10 / 5", "2.0"},
		{"1_000 + 1", "1001"},
		{"0x10 + 0", "16"},
		{"00", "0"},
		{"1 ** 100000000", "1"},
		{"(-1) ** 100000001", "-1"},
		{"0 ** 0", "1"},
	}
	for _, tc := range cases {
		got, err := builtin.Calculate(tc.expr)
		if err != nil || got != tc.want {
			t.Errorf("Calculate(%q) = %q, %v; want %q", tc.expr, got, err, tc.want)
		}
	}
}

func TestCalculateRefuses(t *testing.T) {
	cases := []struct{ expr, want string }{
		{"1 / 0", "division by zero"},
		{"1 % 0", "division by zero"},
		{"1.5 % 0.0", "division by zero"},
		{"__import__('os')", `position 1: unexpected name "__import__": only numbers and operators are allowed`},
		{"x + 1", `position 1: unexpected name "x": only numbers and operators are allowed`},
		{"1 +", "position 4: expected a number or '(', got end of expression"},
		{"(1 + 2", "position 7: expected ')', got end of expression"},
		{"1 2", "unexpected number 2 at position 3"},
		{"7 // 2", `position 3: "//" is not an operator (floor division and comments are not supported)`},
		{"1; 2", `position 2: unexpected ";"`},
		{"2 ** 99999", "result too large"},
		{"10.0 ** 400", "result out of range"},
		{"(-8) ** 0.5", "a negative number cannot be raised to a fractional power (complex result)"},
		{"0.0 ** -1", "0.0 cannot be raised to a negative power"},
		{"010", "position 1: leading zeros in 010 are not allowed"},
		{"1e999", "position 1: invalid number 1e999"},
		{"'a'", `position 1: unexpected "'a'"`},
		{strings.Repeat("(", 100) + "1" + strings.Repeat(")", 100), "expression nested deeper than 64 levels"},
		{strings.Repeat("-", 100) + "1", "expression nested deeper than 64 levels"},
		{strings.Repeat("1+", 600) + "1", "expression longer than 1000 characters"},
		{"", "position 1: expected a number or '(', got end of expression"},
	}
	for _, tc := range cases {
		got, err := builtin.Calculate(tc.expr)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Calculate(%q) = %q, %v; want error %q", tc.expr, got, err, tc.want)
		}
	}
}

func FuzzCalculate(f *testing.F) {
	for _, s := range []string{"1+2*3", "2**-1", "(((1)))", "1/0", "-7%3", "1e308*10", "0x1p-2", "2^3^2", "''", "a.b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		out, err := builtin.Calculate(expr)
		if err == nil && out == "" {
			t.Fatalf("Calculate(%q) succeeded with no output", expr)
		}
	})
}
