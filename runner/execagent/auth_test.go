package execagent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"tolokaforge.io/operator/api/authn"
	pb "tolokaforge.io/operator/api/execagentpb"
)

func TestAuthentication(t *testing.T) {
	a := startAgent(t, nil)
	conn, err := grpc.NewClient(a.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	raw := pb.NewExecAgentClient(conn)
	const wrong = "wrong-token-value"
	for _, tc := range []struct {
		name string
		md   []string
		code codes.Code
	}{
		{"no token", nil, codes.Unauthenticated},
		{"wrong token", []string{authn.MetadataKey, authn.Bearer(wrong)}, codes.Unauthenticated},
		{"no scheme", []string{authn.MetadataKey, a.token}, codes.Unauthenticated},
		{"two values", []string{authn.MetadataKey, authn.Bearer(a.token), authn.MetadataKey, authn.Bearer(a.token)}, codes.Unauthenticated},
		{"right token", []string{authn.MetadataKey, authn.Bearer(a.token)}, codes.OK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if tc.md != nil {
				ctx = metadata.AppendToOutgoingContext(ctx, tc.md...)
			}
			calls := map[string]func() error{
				"Exec": func() error {
					_, err := raw.Exec(ctx, &pb.ExecRequest{Command: "true", TimeoutMs: 1000})
					return err
				},
				"ReadFile": func() error { _, err := raw.ReadFile(ctx, &pb.ReadFileRequest{Path: "/etc/hostname"}); return err },
				"ListDir":  func() error { _, err := raw.ListDir(ctx, &pb.ListDirRequest{Path: "/"}); return err },
				"KillAll":  func() error { _, err := raw.KillAll(ctx, &pb.KillAllRequest{GraceMs: 10}); return err },
			}
			for name, call := range calls {
				err := call()
				if tc.code == codes.OK {
					if status.Code(err) == codes.Unauthenticated {
						t.Fatalf("%s refused with the right token: %v", name, err)
					}
					continue
				}
				if status.Code(err) != tc.code {
					t.Fatalf("%s: %v, want %s", name, err, tc.code)
				}
				if strings.Contains(err.Error(), wrong) || strings.Contains(err.Error(), a.token) {
					t.Fatalf("%s: the error echoes a token: %v", name, err)
				}
			}
			// Health needs none.
			h, err := raw.Health(ctx, &pb.HealthRequest{})
			if err != nil || !h.Ok || h.Version != "test-1" {
				t.Fatalf("health %v %v, want ok test-1", h, err)
			}
		})
	}
}
