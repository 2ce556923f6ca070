package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"tolokaforge.io/operator/api/artifacts"
	"tolokaforge.io/operator/api/artifacts/blobstore"
	"tolokaforge.io/operator/api/runnerpb"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/manager"
	"tolokaforge.io/operator/results/report"
	"tolokaforge.io/operator/test/envtest"
	"tolokaforge.io/operator/test/envtest/controlplane"
	"tolokaforge.io/operator/test/s3server"
)

// resultsEnv is a real API server (no manager: the test writes the Trials'
// status as a manager would) and a real S3-compatible server holding the
// artifacts the manager's hosts wrote.
func resultsEnv(t *testing.T) (client.Client, *blobstore.Store, *s3server.Server) {
	t.Helper()
	if why := envtest.AssetsMissing(); why != "" {
		t.Skip(why)
	}
	env, err := controlplane.Start(controlplane.Options{CRDs: true})
	if err != nil {
		t.Fatalf("envtest: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	cfg := env.Config
	scheme, err := manager.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	srv := s3server.Start(t, "results")
	store, err := blobstore.Open(context.Background(), srv.URL("results", "prod"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return c, store, srv
}

// writeAttempt stores one attempt as the manager's host does.
func writeAttempt(t *testing.T, s *blobstore.Store, ns, trial string, index, n int, outcome string, pass *bool) {
	t.Helper()
	a := &artifacts.Attempt{TrialID: "shop_orders_02:" + strconv.Itoa(index), TaskID: "shop_orders_02", TrialIndex: index,
		AttemptNumber: n, Outcome: outcome, TerminationReason: "agent_done", Turns: 2,
		StartTime: time.Unix(100, 0), EndTime: time.Unix(110, 0),
		AgentUsage: artifacts.Usage{Calls: 2, PromptTokens: 100, CompletionTokens: 10, CostUSD: 0.5}}
	if pass != nil {
		a.Grade = &runnerpb.Grade{BinaryPass: *pass, Score: map[bool]float64{true: 1, false: 0.25}[*pass], Reasons: "State: diff"}
		a.GradedBy = "runner"
	}
	if _, err := artifacts.WriteTo(context.Background(), s.Sink(ns+"/"+trial+"/attempt-"+strconv.Itoa(n)), a); err != nil {
		t.Fatal(err)
	}
}

func TestResultsPullCampaignAndTrial(t *testing.T) {
	c, store, srv := resultsEnv(t)
	ctx := ctxT(t)
	ns := "evals"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	camp := envtest.MakeCampaign("camp", ns).Tasks("shop").TrialsPerTask(1).Agent("oracle-a", envtest.Oracle()).Agent("oracle-b", envtest.Oracle()).Obj()
	if err := c.Create(ctx, camp); err != nil {
		t.Fatal(err)
	}
	yes, no := true, false
	mk := func(name, agent string, index int32, withArtifacts bool) {
		tr := envtest.MakeTrial(name, ns).Task("shop").Agent(envtest.Oracle()).Obj()
		tr.Spec.TrialIndex = index
		if agent != "" {
			tr.Labels = map[string]string{evalv1.LabelCampaign: "camp", evalv1.LabelAgent: agent}
			if err := controllerutil.SetControllerReference(camp, tr, c.Scheme()); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Create(ctx, tr); err != nil {
			t.Fatalf("create trial %s: %v", name, err)
		}
		tr.Status.TaskID, tr.Status.Agent, tr.Status.Phase = "shop_orders_02", "oracle", evalv1.PhasePassed
		if withArtifacts {
			tr.Status.ArtifactsURL = store.URL(ns + "/" + name + "/")
		}
		if err := c.Status().Update(ctx, tr); err != nil {
			t.Fatalf("status of %s: %v", name, err)
		}
	}
	// oracle-a's trial failed on infrastructure once and passed on retry.
	writeAttempt(t, store, ns, "camp-a-0", 0, 1, string(evalv1.OutcomeInfraFailed), nil)
	writeAttempt(t, store, ns, "camp-a-0", 0, 2, string(evalv1.OutcomePassed), &yes)
	mk("camp-a-0", "oracle-a", 0, true)
	writeAttempt(t, store, ns, "camp-b-0", 0, 1, string(evalv1.OutcomeFailed), &no)
	mk("camp-b-0", "oracle-b", 0, true)
	mk("camp-b-1", "oracle-b", 1, false) // still running: no artifacts yet
	writeAttempt(t, store, ns, "loner", 3, 1, string(evalv1.OutcomePassed), &yes)
	mk("loner", "", 3, true)

	out := filepath.Join(t.TempDir(), "pulled")
	var stdout, stderr bytes.Buffer
	if err := runResults(ctx, []string{"pull", "camp", "--out", out, "--namespace", ns}, &stdout, &stderr, c); err != nil {
		t.Fatalf("pull campaign: %v\n%s", err, stderr.String())
	}
	got := stdout.String()
	for _, want := range []string{
		"camp-a-0: 8 files from s3://results/prod/evals/camp-a-0/\n",
		"camp-b-0: 6 files from s3://results/prod/evals/camp-b-0/\n",
		"pulled 2 trial(s) of campaign evals/camp, 14 files, into " + out + "\n",
		"no artifacts yet: camp-b-1\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "loner") || strings.Contains(got, "endpoint") || strings.Contains(got, s3server.SecretAccessKey) {
		t.Errorf("output names a trial outside the campaign, the endpoint or the secret:\n%s", got)
	}
	top := filepath.Join(out, "oracle-a", "trials", "shop_orders_02", "0")
	if b, err := os.ReadFile(filepath.Join(top, "trajectory.yaml")); err != nil || !strings.Contains(string(b), "attempt: 2") {
		t.Fatalf("oracle-a's top trajectory: %v\n%s", err, b)
	}
	if _, err := os.Stat(filepath.Join(top, "attempts", "1", "trajectory.yaml")); err != nil {
		t.Fatal(err)
	}

	// The pulled directory is what `report --artifacts` reads: one column
	// per agent, the retried trial counted once with both attempts' spend.
	rep, err := report.FromArtifacts(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Trials) != 2 {
		t.Fatalf("report trials: %+v", rep.Trials)
	}
	phases := map[string]string{}
	for _, tr := range rep.Trials {
		phases[tr.Agent] = tr.Phase
		if tr.Agent == "oracle-a" && tr.CostUSD != 1.0 {
			t.Errorf("oracle-a cost %v, want both attempts' 1.0", tr.CostUSD)
		}
	}
	if phases["oracle-a"] != "Passed" || phases["oracle-b"] != "Failed" {
		t.Errorf("phases %v", phases)
	}

	// One Trial by name.
	one := filepath.Join(t.TempDir(), "one")
	stdout.Reset()
	if err := runResults(ctx, []string{"pull", "loner", "--out", one, "--namespace", ns}, &stdout, &stderr, c); err != nil {
		t.Fatalf("pull trial: %v", err)
	}
	if _, err := os.Stat(filepath.Join(one, "oracle", "trials", "shop_orders_02", "3", "grade.yaml")); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}

	// `report` on the store's URL: mirrored, then read as the manager's layout.
	stdout.Reset()
	if err := runReport(ctx, []string{"--artifacts", srv.URL("results", "prod"), "--k", "1"}, &stdout, &stderr, nil); err != nil {
		t.Fatalf("report on a URL: %v\n%s", err, stderr.String())
	}
	if got := stdout.String(); !strings.Contains(got, "shop_orders_02") || !strings.Contains(got, "evals/camp-a-0") {
		t.Errorf("report on a URL:\n%s", got)
	}

	// Bad input: clear errors, nothing written.
	bad := filepath.Join(t.TempDir(), "bad")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"pull", "nosuch", "--out", bad, "--namespace", ns}, `results pull: no campaign or trial "nosuch" in namespace evals; nothing written`},
		{[]string{"pull", "camp-b-1", "--out", bad, "--namespace", ns}, "results pull: trial evals/camp-b-1 has no trial with status.artifactsURL (trials without: camp-b-1); nothing written"},
		{[]string{"pull", "camp", "--namespace", ns}, "results pull: --out DIR is required"},
		{[]string{"pull", "a", "b", "--out", bad}, `results pull: name one campaign or trial, got ["a" "b"]`},
		{[]string{"push"}, `results: want subcommand "pull", got ["push"]`},
	} {
		err := runResults(ctx, tc.args, &stdout, &stderr, c)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q: %v\nwant %q", tc.args, err, tc.want)
		}
	}
	if _, err := os.Stat(bad); !os.IsNotExist(err) {
		t.Errorf("%s written: %v", bad, err)
	}
	if err := runReport(ctx, []string{"--artifacts", srv.URL("results", "empty")}, &stdout, &stderr, nil); err == nil ||
		!strings.Contains(err.Error(), "report: s3://results/empty/: no objects there") {
		t.Errorf("report on an empty prefix: %v", err)
	}
}
