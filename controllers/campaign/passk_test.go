package campaign

import (
	"math"
	"math/big"
	"testing"
)

func TestPassAtKAndPassHatKHandComputed(t *testing.T) {
	cases := []struct {
		name            string
		n, c, k         int
		passAt, passHat float64
		ok              bool
	}{
		{"half pass k=1", 4, 2, 1, 0.5, 0.5, true},
		{"half pass k=2: 1-C(2,2)/C(4,2), C(2,2)/C(4,2)", 4, 2, 2, 1 - 1.0/6, 1.0 / 6, true},
		{"three of four k=2: C(1,2)=0, C(3,2)/6", 4, 3, 2, 1, 0.5, true},
		{"three of four k=n: one failure is always drawn", 4, 3, 4, 1, 0, true},
		{"c=n", 4, 4, 4, 1, 1, true},
		{"c=n k=1", 7, 7, 1, 1, 1, true},
		{"c=0", 4, 0, 2, 0, 0, true},
		{"c=0 k=1", 5, 0, 1, 0, 0, true},
		{"n=5 c=2 k=3: 1-C(3,3)/C(5,3)", 5, 2, 3, 0.9, 0, true},
		{"n=10 c=7 k=5: C(7,5)/C(10,5)=21/252", 10, 7, 5, 1, 21.0 / 252, true},
		{"n=10 c=4 k=3: 1-20/120, 4/120", 10, 4, 3, 1 - 20.0/120, 4.0 / 120, true},
		{"n=1000 c=1 k=500: 1-C(999,500)/C(1000,500)=1-500/1000", 1000, 1, 500, 0.5, 0, true},
		{"n=1000 c=999 k=1000", 1000, 999, 1000, 1, 0, true},
		{"n=1000 c=1000 k=1000", 1000, 1000, 1000, 1, 1, true},
		{"n<k is undefined", 3, 1, 4, 0, 0, false},
		{"n=0", 0, 0, 1, 0, 0, false},
		{"k=0 is undefined", 4, 2, 0, 0, 0, false},
		{"negative k", 4, 2, -1, 0, 0, false},
		{"c>n", 4, 5, 2, 0, 0, false},
		{"c<0", 4, -1, 2, 0, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			at, ok1 := PassAtK(tc.n, tc.c, tc.k)
			hat, ok2 := PassHatK(tc.n, tc.c, tc.k)
			if ok1 != tc.ok || ok2 != tc.ok {
				t.Fatalf("ok = %v, %v; want %v", ok1, ok2, tc.ok)
			}
			if !tc.ok {
				if at != 0 || hat != 0 {
					t.Fatalf("undefined values must be 0, got %v, %v", at, hat)
				}
				return
			}
			if math.Abs(at-tc.passAt) > 1e-15 {
				t.Errorf("pass@%d(n=%d,c=%d) = %.17g, want %.17g", tc.k, tc.n, tc.c, at, tc.passAt)
			}
			if math.Abs(hat-tc.passHat) > 1e-15 {
				t.Errorf("pass^%d(n=%d,c=%d) = %.17g, want %.17g", tc.k, tc.n, tc.c, hat, tc.passHat)
			}
		})
	}
}

// TestPassHatKNoUnderflowToGarbage: 1/C(1000,500) is about 3.7e-300, inside
// float64's range; the exact product must land on it, not on 0, NaN or Inf.
func TestPassHatKHugeBinomials(t *testing.T) {
	got, ok := PassHatK(1000, 500, 500)
	if !ok {
		t.Fatal("undefined")
	}
	want, _ := new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Binomial(1000, 500)).Float64()
	if got != want || got <= 0 || math.IsInf(got, 0) || math.IsNaN(got) {
		t.Fatalf("pass^500(1000, 500) = %g, want %g", got, want)
	}
}

// TestEstimatorsAgainstBinomials sweeps small n against big.Int's own
// binomials (a different computation) and checks the estimators' bounds and
// monotonicity in k.
func TestEstimatorsAgainstBinomials(t *testing.T) {
	ratio := func(a, n, k int) float64 {
		if a < k {
			return 0
		}
		f, _ := new(big.Rat).SetFrac(new(big.Int).Binomial(int64(a), int64(k)), new(big.Int).Binomial(int64(n), int64(k))).Float64()
		return f
	}
	for n := 1; n <= 40; n++ {
		for c := 0; c <= n; c++ {
			prevAt, prevHat := -1.0, 2.0
			for k := 1; k <= n; k++ {
				at, _ := PassAtK(n, c, k)
				hat, _ := PassHatK(n, c, k)
				if w := 1 - ratio(n-c, n, k); at != w {
					t.Fatalf("pass@%d(n=%d,c=%d) = %.17g, want %.17g", k, n, c, at, w)
				}
				if w := ratio(c, n, k); hat != w {
					t.Fatalf("pass^%d(n=%d,c=%d) = %.17g, want %.17g", k, n, c, hat, w)
				}
				if at < prevAt || hat > prevHat || hat > at+1e-15 {
					t.Fatalf("n=%d c=%d k=%d: pass@k must not fall and pass^k not rise with k, pass^k <= pass@k", n, c, k)
				}
				prevAt, prevHat = at, hat
			}
		}
	}
}

func BenchmarkPassHatK1000(b *testing.B) {
	for b.Loop() {
		PassHatK(1000, 700, 100)
	}
}
