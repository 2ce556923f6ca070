package gradefmt

import (
	"fmt"
	"math"
	"strconv"
)

// Round6 is Python's round(x, 6): correctly rounded on the binary value, so a weighted
// mean of perfect scores is 1.0 and not 0.9999999999999999.
func Round6(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	r, err := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 6, 64), 64)
	if err != nil {
		return x // unreachable: FormatFloat's output always parses
	}
	return r
}

// Score renders a score (or a bar, a weight) for a reason or an error message.
func Score(f float64) string { return strconv.FormatFloat(f, 'g', 6, 64) }

// Quote quotes at most 300 bytes of foreign text (a judge's answer, a reward file's
// content) for an error message.
func Quote(s string) string {
	const max = 300
	if len(s) > max {
		return strconv.Quote(s[:max]) + fmt.Sprintf(" (%d more bytes)", len(s)-max)
	}
	return strconv.Quote(s)
}
