package runner_test

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/runner"
	"tolokaforge.io/operator/runner/client"
)

const scraperToken = "scraper-token-shared-by-all-runners-0123"

// TestRunnerMetricsAcceptTheScraperToken: /metrics answers the runner's own
// credential and the scraper's, and nothing else.
func TestRunnerMetricsAcceptTheScraperToken(t *testing.T) {
	for _, tc := range []struct {
		name        string
		auth, scrap string
		token       string
		want        int
	}{
		{"both set, no token", runnerToken, scraperToken, "", http.StatusUnauthorized},
		{"both set, wrong token", runnerToken, scraperToken, "wrong", http.StatusUnauthorized},
		{"both set, a prefix of the scraper's", runnerToken, scraperToken, scraperToken[:10], http.StatusUnauthorized},
		{"both set, the two joined", runnerToken, scraperToken, runnerToken + scraperToken, http.StatusUnauthorized},
		{"both set, the runner's", runnerToken, scraperToken, runnerToken, http.StatusOK},
		{"both set, the scraper's", runnerToken, scraperToken, scraperToken, http.StatusOK},
		{"scraper's alone set, none", "", scraperToken, "", http.StatusUnauthorized},
		{"scraper's alone set, the scraper's", "", scraperToken, scraperToken, http.StatusOK},
		{"none set, none", "", "", "", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := runner.New(runner.Config{AuthToken: tc.auth, MetricsToken: tc.scrap, WorkDir: t.TempDir(), Logger: testLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			code, fams := scrapeRunner(t, srv.MetricsHandler(), tc.token)
			if code != tc.want {
				t.Fatalf("scrape with %q answered %d, want %d", tc.token, code, tc.want)
			}
			if code == http.StatusOK && fams["tolokaforge_runner_python_host_restarts_total"] == nil {
				t.Error("an accepted scrape holds no runner series")
			}
		})
	}
}

// TestRunnerRefusesTheScraperTokenOnGRPC: the scraper's token opens /metrics
// only; every RunnerService call carrying it is refused before its handler.
func TestRunnerRefusesTheScraperTokenOnGRPC(t *testing.T) {
	srv, err := runner.New(runner.Config{AuthToken: runnerToken, MetricsToken: scraperToken, WorkDir: t.TempDir(), SelfExecutable: selfBin, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	wg.Go(func() { _ = srv.Serve(ctx, ln) })
	c, err := client.Dial(context.Background(), ln.Addr().String(), client.WithToken(scraperToken))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	cctx := ctxT(t)
	_, err = c.HealthCheck(cctx, &runnerpb.HealthCheckRequest{})
	wantUnauthenticated(t, "RunnerService.HealthCheck with the scraper's token", err)
	_, err = c.GetState(cctx, &runnerpb.GetStateRequest{TrialId: "tr"})
	wantUnauthenticated(t, "GetState with the scraper's token", err)
	_, err = c.CleanupTrial(cctx, &runnerpb.CleanupTrialRequest{TrialId: "tr"})
	wantUnauthenticated(t, "CleanupTrial with the scraper's token", err)
}
