package envtest

import (
	"context"
	"slices"
	"testing"

	"google.golang.org/grpc"

	"tolokaforge.io/operator/api/runnerpb"
)

func TestSlotRunnerArgs(t *testing.T) {
	pods := []string{"--listen=127.0.0.7:50051", "--auth-token-file=/v/tok"}
	if out, slot, _ := slotRunnerArgs(pods, "127.0.0.7"); slot || !slices.Equal(out, pods) {
		t.Errorf("a per-attempt runner's args changed: %v", out)
	}
	in := []string{"--listen=127.0.0.7:50051", "--auth-token-file=/v/tok", "--db-service-url=http://127.0.0.1:8000", "--slot"}
	out, slot, tok := slotRunnerArgs(in, "127.0.0.7")
	want := []string{"--listen=127.0.0.7:50051", "--auth-token-file=/v/tok", "--db-service-url=http://127.0.0.7:8000"}
	if !slot || tok != "/v/tok" || !slices.Equal(out, want) {
		t.Errorf("slot args %v token %q, want %v", out, tok, want)
	}
}

type lastRegister struct {
	runnerpb.RunnerServiceClient
	spec string
}

func (l *lastRegister) RegisterTrial(_ context.Context, in *runnerpb.RegisterTrialRequest, _ ...grpc.CallOption) (*runnerpb.RegisterTrialResponse, error) {
	l.spec = in.GetTrialSpecJson()
	return &runnerpb.RegisterTrialResponse{Success: true}, nil
}

// Only the loopback DB URL of a slot is pointed at the slot pod's address.
func TestSlotRewrite(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"env_endpoints":{"db_service_url":"http://127.0.0.1:8000"}}`, `{"env_endpoints":{"db_service_url":"http://127.0.0.9:8000"}}`},
		{`{"env_endpoints":{"db_service_url":"http://127.0.0.4:8000"}}`, `{"env_endpoints":{"db_service_url":"http://127.0.0.4:8000"}}`},
	} {
		l := &lastRegister{}
		req := &runnerpb.RegisterTrialRequest{TrialSpecJson: tc.in}
		if _, err := (&slotRewrite{RunnerServiceClient: l, db: "http://127.0.0.9:8000"}).RegisterTrial(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		if l.spec != tc.want || req.TrialSpecJson != tc.in {
			t.Errorf("sent %s (caller's request now %s), want %s", l.spec, req.TrialSpecJson, tc.want)
		}
	}
}
