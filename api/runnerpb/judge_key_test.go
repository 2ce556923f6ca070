package runnerpb

import (
	"context"
	"testing"

	"google.golang.org/grpc/metadata"
)

func TestJudgeKeyFromIncoming(t *testing.T) {
	cases := []struct {
		name    string
		ctx     context.Context
		wantKey string
		wantOK  bool
	}{
		{"no metadata", context.Background(), "", false},
		{"other metadata only", metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", "Bearer x")), "", false},
		{"a key", metadata.NewIncomingContext(context.Background(), JudgeKeyMD("sk-a")), "sk-a", true},
		{"trimmed", metadata.NewIncomingContext(context.Background(), JudgeKeyMD(" sk-a\n")), "sk-a", true},
		{"blank", metadata.NewIncomingContext(context.Background(), JudgeKeyMD("  ")), "", false},
		{"last wins", metadata.NewIncomingContext(context.Background(), metadata.Pairs(JudgeKeyMetadata, "sk-a", JudgeKeyMetadata, "sk-b")), "sk-b", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key, ok := JudgeKeyFromIncoming(tc.ctx)
			if key != tc.wantKey || ok != tc.wantOK {
				t.Fatalf("JudgeKeyFromIncoming = %q, %t; want %q, %t", key, ok, tc.wantKey, tc.wantOK)
			}
		})
	}
}

// WithJudgeKey puts the key where JudgeKeyFromIncoming reads it once gRPC
// has carried the outgoing metadata across.
func TestWithJudgeKeyIsOutgoing(t *testing.T) {
	ctx := WithJudgeKey(metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer x"), "sk-a")
	md, ok := metadata.FromOutgoingContext(ctx)
	if !ok {
		t.Fatal("no outgoing metadata")
	}
	if got := md.Get(JudgeKeyMetadata); len(got) != 1 || got[0] != "sk-a" {
		t.Fatalf("outgoing %s = %q, want [sk-a]", JudgeKeyMetadata, got)
	}
	if got := md.Get("authorization"); len(got) != 1 {
		t.Fatalf("outgoing authorization = %q: WithJudgeKey dropped other metadata", got)
	}
	key, ok := JudgeKeyFromIncoming(metadata.NewIncomingContext(context.Background(), md))
	if key != "sk-a" || !ok {
		t.Fatalf("read back %q, %t", key, ok)
	}
}
