package runnerpb

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/metadata"
)

// EnvironmentTokenMetadata is the RegisterTrial request metadata key carrying
// the bearer token of the trial's environment (a terminal task's exec agent).
// A per-attempt runner reads it from a file of the attempt's Secret; a slot's
// runner outlives the attempt, so the host sends it with the registration
// instead. It is never in the TrialSpec JSON (logged and stored), and the
// runner keeps it in that trial's memory only, dropped at CleanupTrial.
const EnvironmentTokenMetadata = "tolokaforge-environment-token"

// EnvironmentTokenMD is the request metadata carrying token.
func EnvironmentTokenMD(token string) metadata.MD {
	return metadata.Pairs(EnvironmentTokenMetadata, token)
}

// WithEnvironmentToken is ctx with token added to its outgoing metadata, for
// the host's RegisterTrial call.
func WithEnvironmentToken(ctx context.Context, token string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, EnvironmentTokenMetadata, token)
}

// EnvironmentTokenFromIncoming is the environment token a RegisterTrial call
// carries, with surrounding white space removed; ok is false when it carries
// none, or only a blank value. A call carrying more than one value, or one
// that is not a single word of printable ASCII, is refused (err): the host
// sends exactly one token, so anything else is not the host's. The error
// never holds the value.
func EnvironmentTokenFromIncoming(ctx context.Context) (token string, ok bool, err error) {
	md, found := metadata.FromIncomingContext(ctx)
	if !found {
		return "", false, nil
	}
	vs := md.Get(EnvironmentTokenMetadata)
	switch len(vs) {
	case 0:
		return "", false, nil
	case 1:
	default:
		return "", false, fmt.Errorf("the registration carries %d environment tokens (%s), not one", len(vs), EnvironmentTokenMetadata)
	}
	token = strings.TrimSpace(vs[0])
	if token == "" {
		return "", false, nil
	}
	for i := 0; i < len(token); i++ {
		if c := token[i]; c <= ' ' || c > '~' {
			return "", false, errors.New("the registration's environment token (" + EnvironmentTokenMetadata + ") is not a single word of printable ASCII")
		}
	}
	return token, true, nil
}
