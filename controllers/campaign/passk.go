package campaign

import (
	"math/big"
)

// PassAtK is the unbiased pass@k estimator of Chen et al.: the probability
// that at least one of k trials drawn without replacement from n trials, c of
// which passed, passes: 1 - C(n-c,k)/C(n,k). ok is false when it is
// undefined: k < 1, n < k, or c outside [0, n].
func PassAtK(n, c, k int) (float64, bool) {
	r, ok := chooseRatio(n, n-c, c, k)
	if !ok {
		return 0, false
	}
	return 1 - r, true
}

// PassHatK is tau-bench's pass^k: the probability that all k trials drawn
// without replacement from n trials, c of which passed, pass:
// C(c,k)/C(n,k). ok is false when it is undefined (as for PassAtK).
func PassHatK(n, c, k int) (float64, bool) {
	return chooseRatio(n, c, c, k)
}

// chooseRatio is C(a,k)/C(n,k) for 0 <= a <= n, computed exactly as the
// rational product of (a-i)/(n-i) for i < k and rounded once to float64:
// binomials of a thousand trials overflow float64 and lose digits in
// log-gamma, the product of big integers does neither. c is only validated.
func chooseRatio(n, a, c, k int) (float64, bool) {
	if k < 1 || n < k || c < 0 || c > n {
		return 0, false
	}
	switch {
	case a < k:
		return 0, true
	case a == n:
		return 1, true
	}
	num, den := big.NewInt(1), big.NewInt(1)
	var t big.Int
	for i := 0; i < k; i++ {
		num.Mul(num, t.SetInt64(int64(a-i)))
		den.Mul(den, t.SetInt64(int64(n-i)))
	}
	f, _ := new(big.Rat).SetFrac(num, den).Float64()
	return f, true
}
