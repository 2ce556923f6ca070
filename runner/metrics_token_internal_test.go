package runner

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMetricsTokenFileFlag: --metrics-token-file's token opens /metrics of a
// runner started from flags, as does --auth-token-file's; a file that is
// absent or empty stops the runner naming the flag.
func TestMetricsTokenFileFlag(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tokFile := write("metrics-token", "scrape-me-0123456789\n")
	authFile := write("auth-token", "runner-own-0123456789")
	empty := write("empty", "")
	for _, tc := range []struct{ file, want string }{
		{filepath.Join(dir, "absent"), "absent"},
		{empty, "is empty"},
	} {
		err := run(context.Background(), []string{"--listen=127.0.0.1:0", "--work-dir=" + dir, "--metrics-token-file=" + tc.file},
			Config{SelfExecutable: "/bin/true"}, io.Discard, nil)
		if err == nil || !strings.Contains(err.Error(), "--metrics-token-file") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--metrics-token-file=%s: err = %v, want it to name the flag and say %q", tc.file, err, tc.want)
		}
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--listen", "127.0.0.1:0", "--metrics-bind-address", addr, "--work-dir", t.TempDir(),
			"--auth-token-file", authFile, "--metrics-token-file", tokFile, "--log-level", "error"},
			Config{SelfExecutable: "/bin/true"}, io.Discard, ready)
	}()
	<-ready
	for _, tc := range []struct {
		token string
		want  int
	}{{"", http.StatusUnauthorized}, {"scrape-me", http.StatusUnauthorized}, {"scrape-me-0123456789", http.StatusOK}, {"runner-own-0123456789", http.StatusOK}} {
		req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			t.Fatalf("scrape: %v", err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("scrape with %q answered %d, want %d", tc.token, resp.StatusCode, tc.want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}
