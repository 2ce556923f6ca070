package gradefmt

import "testing"

func TestRound6(t *testing.T) {
	for in, want := range map[float64]float64{
		0.7*1 + 0.3*1:          1,
		1.0 / 3:                0.333333,
		2.0 / 3:                0.666667,
		0.1 + 0.2:              0.3,
		0.0000005:              0,        // 5e-07 is stored just below the half: Python gives 0.0 too
		0.1234565:              0.123456, // stored just below the half: Python rounds down too
		4.0 / 7.0 * 0.4:        0.228571,
		0.7*0.228571 + 0.3*8/9: 0.426666,
	} {
		if got := Round6(in); got != want {
			t.Errorf("Round6(%v) = %v, want %v", in, got, want)
		}
	}
}
