package dbservice

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"tolokaforge.io/operator/dbservice/client"
)

func TestParseFlags(t *testing.T) {
	withBody := func(n int64) Limits { l := defaultLimits; l.MaxBodyBytes = n; return l }
	custom := defaultLimits
	custom.MaxNumberDigits, custom.MaxOpsPerPatch, custom.MaxQueryResponseBytes = 10, 20, 30
	custom.MaxTablesPerTrial, custom.MaxRecordsPerTrial, custom.MaxTrialBytes = 40, 50, 60
	custom.MaxSnapshotsPerTrial, custom.MaxTrials, custom.MaxTotalBytes = 70, 80, 90
	custom.ReadHeaderTimeout, custom.BodyReadTimeout = time.Second, 2*time.Second
	tests := []struct {
		args    []string
		want    config
		wantErr string
	}{
		{nil, config{listen: "127.0.0.1:8000", limits: defaultLimits, logLevel: 0}, ""},
		{[]string{"--listen", "0.0.0.0:9", "--max-body-bytes", "1024", "--log-level", "debug"}, config{listen: "0.0.0.0:9", limits: withBody(1024), logLevel: 1}, ""},
		{[]string{"--log-level=error"}, config{listen: "127.0.0.1:8000", limits: defaultLimits, logLevel: -1}, ""},
		{[]string{"--log-level=3"}, config{listen: "127.0.0.1:8000", limits: defaultLimits, logLevel: 3}, ""},
		{[]string{"--max-number-digits=10", "--max-operations-per-patch=20", "--max-query-response-bytes=30",
			"--max-tables-per-trial=40", "--max-records-per-trial=50", "--max-trial-bytes=60",
			"--max-snapshots-per-trial=70", "--max-trials=80", "--max-total-bytes=90",
			"--read-header-timeout=1s", "--body-read-timeout=2s"}, config{listen: "127.0.0.1:8000", limits: custom}, ""},
		{[]string{"--log-level=loud"}, config{}, `dbservice flags: --log-level "loud": want error, info, debug or a verbosity >= 0`},
		{[]string{"--max-body-bytes=0"}, config{}, "dbservice flags: --max-body-bytes must be positive, got 0"},
		{[]string{"--max-trials=-1"}, config{}, "dbservice flags: --max-trials must be positive, got -1"},
		{[]string{"--body-read-timeout=0s"}, config{}, "dbservice flags: --body-read-timeout must be positive, got 0"},
		{[]string{"--max-number-digits=x"}, config{}, `dbservice flags: invalid value "x" for flag -max-number-digits: parse error`},
		{[]string{"extra"}, config{}, `dbservice flags: unexpected arguments ["extra"]`},
		{[]string{"--nope"}, config{}, "dbservice flags: flag provided but not defined: -nope"},
	}
	for _, tt := range tests {
		cfg, err := parseFlags(tt.args, io.Discard)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("parseFlags(%q) error = %v, want %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil || *cfg != tt.want {
			t.Errorf("parseFlags(%q) = %+v, %v; want %+v", tt.args, cfg, err, tt.want)
		}
	}
}

// Main's code path end to end: listen on a free port, log the address, serve, stop
// cleanly when the context ends.
func TestRunServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--listen", "127.0.0.1:0", "--log-level", "debug"}, pw)
		_ = pw.Close()
	}()
	lines := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var first struct {
		Logger, Msg, Address string
	}
	if err := json.Unmarshal([]byte(<-lines), &first); err != nil || first.Msg != "serving" || first.Logger != "dbservice" {
		t.Fatalf("first log line: %+v, %v", first, err)
	}
	c := client.New("http://" + first.Address)
	h, err := c.Health(ctx)
	if err != nil || h.Status != "healthy" {
		t.Fatalf("health = %+v, %v", h, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run returned %v after cancel", err)
	}
	var all []string
	for l := range lines {
		all = append(all, l)
	}
	joined := strings.Join(all, "\n")
	if !strings.Contains(joined, `"msg":"request"`) || !strings.Contains(joined, `"path":"/health"`) || !strings.Contains(joined, `"msg":"stopped"`) {
		t.Fatalf("debug log lacks the request or the stop:\n%s", joined)
	}
}

func TestRunReportsListenError(t *testing.T) {
	err := run(context.Background(), []string{"--listen", "256.0.0.1:1"}, io.Discard)
	if err == nil || !strings.HasPrefix(err.Error(), "dbservice: listen on 256.0.0.1:1: ") {
		t.Fatalf("run with a bad address = %v", err)
	}
	if err := run(context.Background(), []string{"--help"}, io.Discard); err != nil {
		t.Fatalf("--help = %v", err)
	}
	if err := Main(context.Background(), []string{"--bogus"}); err == nil || errors.Is(err, context.Canceled) {
		t.Fatalf("Main with a bad flag = %v", err)
	}
}
