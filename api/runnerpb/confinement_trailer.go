package runnerpb

import (
	"strconv"

	"google.golang.org/grpc/metadata"
)

// ConfinementTrailer rides on a successful RegisterTrial: the Landlock ABI
// version the runner confines the trial's tools and checks with, "0" where
// its kernel has none. The spec's RegisterTrialResponse has no field for it;
// the host turns it into the Trial's Confined condition, so an unconfined
// run is never silent in a cluster.
const ConfinementTrailer = "tolokaforge-landlock-abi"

// ConfinementMD is the trailer metadata saying the runner confines with
// Landlock ABI abi (0: not at all).
func ConfinementMD(abi int) metadata.MD {
	return metadata.Pairs(ConfinementTrailer, strconv.Itoa(abi))
}

// ConfinementFromMD reads the trailer: ok is false when the runner sent none
// (an older or foreign runner) or a value that is not a non-negative number.
func ConfinementFromMD(md metadata.MD) (abi int, ok bool) {
	b := lastBytes(md, ConfinementTrailer)
	if b == nil {
		return 0, false
	}
	n, err := strconv.Atoi(string(b))
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}
