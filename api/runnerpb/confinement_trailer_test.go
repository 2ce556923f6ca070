package runnerpb

import (
	"testing"

	"google.golang.org/grpc/metadata"
)

func TestConfinementFromMD(t *testing.T) {
	cases := []struct {
		name   string
		md     metadata.MD
		abi    int
		wantOK bool
	}{
		{"none sent", metadata.MD{}, 0, false},
		{"abi 7", ConfinementMD(7), 7, true},
		{"unconfined", ConfinementMD(0), 0, true},
		{"garbage", metadata.Pairs(ConfinementTrailer, "seven"), 0, false},
		{"negative", metadata.Pairs(ConfinementTrailer, "-1"), 0, false},
		{"last wins", metadata.Pairs(ConfinementTrailer, "3", ConfinementTrailer, "6"), 6, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			abi, ok := ConfinementFromMD(tc.md)
			if abi != tc.abi || ok != tc.wantOK {
				t.Fatalf("ConfinementFromMD = %d, %t; want %d, %t", abi, ok, tc.abi, tc.wantOK)
			}
		})
	}
}
