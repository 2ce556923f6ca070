package runnerpb

import (
	"context"
	"strings"

	"google.golang.org/grpc/metadata"
)

// JudgeKeyMetadata is the RegisterTrial request metadata key carrying the
// trial's judge key (its gateway token). A slot's runner outlives the Trial,
// so the per-Trial key cannot be a file mounted into its pod; the spec's
// RegisterTrialRequest has no field for it, and the TrialSpec JSON must not
// carry a secret (it is logged and stored). The runner keeps the key in
// memory for that trial only and drops it at CleanupTrial.
const JudgeKeyMetadata = "tolokaforge-judge-key"

// JudgeKeyMD is the request metadata carrying key.
func JudgeKeyMD(key string) metadata.MD {
	return metadata.Pairs(JudgeKeyMetadata, key)
}

// WithJudgeKey is ctx with key added to its outgoing metadata, for the host's
// RegisterTrial call.
func WithJudgeKey(ctx context.Context, key string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, JudgeKeyMetadata, key)
}

// JudgeKeyFromIncoming is the judge key a RegisterTrial call carries, with
// surrounding white space removed (a key read from a file ends with a
// newline); ok is false when the call carries none, or only blank values.
// The last value wins, as for the trailers.
func JudgeKeyFromIncoming(ctx context.Context) (key string, ok bool) {
	md, found := metadata.FromIncomingContext(ctx)
	if !found {
		return "", false
	}
	key = strings.TrimSpace(string(lastBytes(md, JudgeKeyMetadata)))
	return key, key != ""
}
