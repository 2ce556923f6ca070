package dbservice

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"tolokaforge.io/operator/dbservice/client"
)

const testToken = "attempt-credential-0123456789"

// Every request but GET /health needs the trial's credential; a refused one
// is 401 and changes nothing: state, version and hashes are those before.
func TestRequestsWithoutTheCredentialAreRefusedAndChangeNothing(t *testing.T) {
	srv := New(Options{AuthToken: testToken})
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	ctx := context.Background()

	good := client.New(hs.URL, client.WithToken(testToken))
	if _, err := good.Init(ctx, "t1", client.InitRequest{Tables: tablesOf(t, `{"orders":[{"id":1,"status":"new"}]}`)}); err != nil {
		t.Fatalf("init with the credential: %v", err)
	}
	before, err := good.Hash(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}

	patch := `{"operations":[{"op":"update","filter":{"id":1},"set":{"status":"refunded"}}]}`
	for _, tc := range []struct {
		name, auth, why string
	}{
		{"no header", "", "carries no trial credential"},
		{"wrong token", "Bearer not-the-token", "is not this DB service's"},
		{"token without scheme", testToken, "is not this DB service's"},
		{"a prefix of the token", "Bearer " + testToken[:10], "is not this DB service's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []struct{ method, path, body string }{
				{http.MethodPatch, "/trials/t1/state/orders", patch},
				{http.MethodPost, "/trials/t1/reset", ""},
				{http.MethodDelete, "/trials/t1", ""},
				{http.MethodPost, "/trials/t2/init", `{"tables":{}}`},
				{http.MethodGet, "/trials/t1/state", ""},
				{http.MethodGet, "/metrics", ""},
			} {
				req, err := http.NewRequest(r.method, hs.URL+r.path, strings.NewReader(r.body))
				if err != nil {
					t.Fatal(err)
				}
				if tc.auth != "" {
					req.Header.Set("Authorization", tc.auth)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				var body struct {
					Error, Message string
				}
				_ = json.NewDecoder(resp.Body).Decode(&body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized || body.Error != errTypeUnauthenticated || !strings.Contains(body.Message, tc.why) {
					t.Errorf("%s %s = %d %s %q, want 401 Unauthenticated saying %q", r.method, r.path, resp.StatusCode, body.Error, body.Message, tc.why)
				}
				if resp.Header.Get("WWW-Authenticate") == "" {
					t.Errorf("%s %s: no WWW-Authenticate challenge", r.method, r.path)
				}
				if strings.Contains(body.Message, testToken) || (tc.auth != "" && strings.Contains(body.Message, tc.auth)) {
					t.Errorf("the refusal echoes a token: %q", body.Message)
				}
			}
		})
	}

	after, err := good.Hash(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if *after != *before {
		t.Fatalf("refused calls changed the trial: before %+v, after %+v", before, after)
	}
	st, err := good.State(ctx, "t1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(st.Data["orders"]), `"new"`) {
		t.Fatalf("refused PATCH landed: %s", st.Data["orders"])
	}
	if _, err := good.Hash(ctx, "t2"); !errors.Is(err, client.ErrTrialNotFound) {
		t.Fatalf("refused init created trial t2: %v", err)
	}

	// The client's error for a refusal matches ErrUnauthenticated.
	_, err = client.New(hs.URL, client.WithToken("wrong")).Hash(ctx, "t1")
	if !errors.Is(err, client.ErrUnauthenticated) || errors.Is(err, client.ErrInvalidRequest) {
		t.Fatalf("wrong token: err = %v, want ErrUnauthenticated", err)
	}
}

func TestHealthStaysOpen(t *testing.T) {
	hs := httptest.NewServer(New(Options{AuthToken: testToken}).Handler())
	t.Cleanup(hs.Close)
	if _, err := client.New(hs.URL).Health(context.Background()); err != nil {
		t.Fatalf("health without a credential: %v", err)
	}
	// A path that only looks like health is not open.
	resp, err := http.Get(hs.URL + "/health/../trials/t1/state")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /health/../trials/t1/state = %d, want 401", resp.StatusCode)
	}
}

// Without a configured token (a DB service started by hand) nothing is
// checked; the check is the server's, not the client's.
func TestNoTokenConfiguredChecksNothing(t *testing.T) {
	hs := httptest.NewServer(New(Options{}).Handler())
	t.Cleanup(hs.Close)
	if _, err := client.New(hs.URL).Init(context.Background(), "t1", client.InitRequest{}); err != nil {
		t.Fatal(err)
	}
}

func TestMainReadsTheTokenFile(t *testing.T) {
	if _, err := parseFlags([]string{"--auth-token-file=/x"}, &strings.Builder{}); err != nil {
		t.Fatal(err)
	}
	err := run(context.Background(), []string{"--auth-token-file=/nonexistent/token", "--listen=127.0.0.1:0"}, &strings.Builder{})
	if err == nil || !strings.Contains(err.Error(), "--auth-token-file") || !strings.Contains(err.Error(), "/nonexistent/token") {
		t.Fatalf("run with a missing token file = %v, want an error naming the flag and the file", err)
	}
}
