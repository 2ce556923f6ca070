package runnerpb

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/metadata"
)

func TestEnvironmentTokenFromIncoming(t *testing.T) {
	in := func(md metadata.MD) context.Context { return metadata.NewIncomingContext(context.Background(), md) }
	const secret = "tok-abc"
	cases := []struct {
		name      string
		ctx       context.Context
		wantToken string
		wantOK    bool
		wantErr   string
	}{
		{name: "no metadata", ctx: context.Background()},
		{name: "other metadata only", ctx: in(metadata.Pairs("authorization", "Bearer x", JudgeKeyMetadata, "sk-judge"))},
		{name: "a token", ctx: in(EnvironmentTokenMD(secret)), wantToken: secret, wantOK: true},
		{name: "trimmed", ctx: in(EnvironmentTokenMD(" " + secret + "\n")), wantToken: secret, wantOK: true},
		{name: "blank", ctx: in(EnvironmentTokenMD("  "))},
		{name: "two values", ctx: in(metadata.Pairs(EnvironmentTokenMetadata, secret, EnvironmentTokenMetadata, "tok-other")),
			wantErr: "the registration carries 2 environment tokens (tolokaforge-environment-token), not one"},
		{name: "inner space", ctx: in(EnvironmentTokenMD("tok abc")),
			wantErr: "the registration's environment token (tolokaforge-environment-token) is not a single word of printable ASCII"},
		{name: "not ASCII", ctx: in(EnvironmentTokenMD("tok-é")),
			wantErr: "is not a single word of printable ASCII"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tok, ok, err := EnvironmentTokenFromIncoming(tc.ctx)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || tok != "" || ok {
					t.Fatalf("EnvironmentTokenFromIncoming = %q, %t, %v; want an error holding %q", tok, ok, err, tc.wantErr)
				}
				// The refusal never repeats what was sent.
				for _, v := range metadata.ValueFromIncomingContext(tc.ctx, EnvironmentTokenMetadata) {
					if strings.Contains(err.Error(), v) {
						t.Fatalf("error %q holds the value sent, %q", err, v)
					}
				}
				return
			}
			if err != nil || tok != tc.wantToken || ok != tc.wantOK {
				t.Fatalf("EnvironmentTokenFromIncoming = %q, %t, %v; want %q, %t, nil", tok, ok, err, tc.wantToken, tc.wantOK)
			}
		})
	}
}

// WithEnvironmentToken puts the token where EnvironmentTokenFromIncoming
// reads it once gRPC has carried the outgoing metadata across, beside the
// judge key and the caller's own metadata.
func TestWithEnvironmentTokenIsOutgoing(t *testing.T) {
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer x")
	ctx = WithEnvironmentToken(WithJudgeKey(ctx, "sk-a"), "tok-a")
	md, ok := metadata.FromOutgoingContext(ctx)
	if !ok {
		t.Fatal("no outgoing metadata")
	}
	if got := md.Get(EnvironmentTokenMetadata); len(got) != 1 || got[0] != "tok-a" {
		t.Fatalf("outgoing %s = %q, want [tok-a]", EnvironmentTokenMetadata, got)
	}
	if got := md.Get("authorization"); len(got) != 1 {
		t.Fatalf("outgoing authorization = %q: WithEnvironmentToken dropped other metadata", got)
	}
	incoming := metadata.NewIncomingContext(context.Background(), md)
	tok, ok, err := EnvironmentTokenFromIncoming(incoming)
	if tok != "tok-a" || !ok || err != nil {
		t.Fatalf("read back %q, %t, %v", tok, ok, err)
	}
	if key, ok := JudgeKeyFromIncoming(incoming); key != "sk-a" || !ok {
		t.Fatalf("judge key read back %q, %t", key, ok)
	}
}
