package runner_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"google.golang.org/protobuf/encoding/prototext"

	"tolokaforge.io/operator/api/llm"
	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner"
	"tolokaforge.io/operator/runner/grading"
	"tolokaforge.io/operator/runner/grading/judge"
	"tolokaforge.io/operator/test/fakellm"
)

// logSink keeps every log line (all verbosities) for a test to search.
type logSink struct {
	mu    sync.Mutex
	lines []string
}

func (l *logSink) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		l.lines = append(l.lines, prefix+" "+args)
		l.mu.Unlock()
	}, funcr.Options{Verbosity: 10})
}

func (l *logSink) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// filesContaining lists the files under dir whose content holds s.
func filesContaining(tb testing.TB, dir, s string) []string {
	tb.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), s) {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// A slot's host gives each trial its judge key in RegisterTrial's metadata
// (runnerpb.JudgeKeyMetadata). The trial's judge sends that key, whatever
// the secrets directory holds; the next trial on the same runner registered
// without one (another id, or the same id again after CleanupTrial) gets the
// file's key, never the first trial's; the key is in no log line, no file of
// the trial and no answer of the runner.
func TestJudgeKeyFromRegisterTrialMetadataIsThatTrialsOnly(t *testing.T) {
	const (
		hostKey = "sk-host-key-of-trial-k-only"
		fileKey = "sk-key-in-the-secrets-dir"
	)
	llmSrv, err := fakellm.New(fakellm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := llmSrv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = llmSrv.Close() })
	secrets := t.TempDir()
	if err := os.WriteFile(filepath.Join(secrets, "judge-api-key"), []byte(fileKey+"\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	logs := &logSink{}
	log := logs.logger()
	g := grading.New(grading.WithLogger(log.WithName("grading")), grading.WithSecretsDir(secrets),
		grading.WithJudgeModels(judge.LLMModels(llm.Options{Log: log.WithName("judge"),
			Retry: &llm.RetryPolicy{MaxRetries: 1, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}})))
	h := startRunner(t, nil, withGrader(g), func(c *runner.Config) { c.Logger = log })

	register := func(t *testing.T, id, keyFile, key string) *runnerpb.RegisterTrialResponse {
		t.Helper()
		ctx := ctxT(t)
		if key != "" {
			ctx = runnerpb.WithJudgeKey(ctx, key)
		}
		resp, err := h.c.RegisterTrial(ctx, &runnerpb.RegisterTrialRequest{TrialId: id, TrialSpecJson: judgeSpec(t, id, llmSrv.URL(), keyFile),
			EngineProtocolVersion: task.EngineProtocolVersion})
		if err != nil {
			t.Fatalf("RegisterTrial(%s): %v", id, err)
		}
		return resp
	}
	var answers []string // every answer the runner gave, to search for the key
	for _, tc := range []struct {
		name, id, keyFile, key string
		wantRefusal            string // a registration refused with this prefix
		wantAuth               string
	}{
		{name: "trial k with the host's key", id: "k", keyFile: "judge-api-key", key: hostKey, wantAuth: "Bearer " + hostKey},
		{name: "trial k+1 without one gets the file's", id: "k1", keyFile: "judge-api-key", wantAuth: "Bearer " + fileKey},
		{name: "trial k again, without one, gets the file's", id: "k", keyFile: "judge-api-key", wantAuth: "Bearer " + fileKey},
		{name: "the host's key needs no key file", id: "nofile", keyFile: "not-mounted", key: hostKey, wantAuth: "Bearer " + hostKey},
		{name: "without either the trial is refused, as before", id: "neither", keyFile: "not-mounted",
			wantRefusal: `Invalid trial_spec_json: judge.api_key_env names key file "not-mounted", which is not in the secrets directory`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := register(t, tc.id, tc.keyFile, tc.key)
			answers = append(answers, prototext.Format(r))
			if tc.wantRefusal != "" {
				if r.GetSuccess() || !strings.HasPrefix(r.GetError(), tc.wantRefusal) {
					t.Fatalf("RegisterTrial: success=%v error %q, want a refusal starting %q", r.GetSuccess(), r.GetError(), tc.wantRefusal)
				}
				return
			}
			if !r.GetSuccess() {
				t.Fatalf("RegisterTrial: %s", r.GetError())
			}
			if err := llmSrv.Enqueue("judge-m", fakellm.Reply{Content: `{"criteria":[{"id":"greets","met":true,"score":1,"justification":"says hello"}]}`}); err != nil {
				t.Fatal(err)
			}
			before := len(llmSrv.Requests())
			resp := grade(t, h, &runnerpb.GradeTrialRequest{TrialId: tc.id, TerminationReason: "agent_done",
				LlmMessagesJson: `[{"role":"user","content":"hi"},{"role":"assistant","content":"Hello!"}]`})
			answers = append(answers, prototext.Format(resp))
			if !resp.GetSuccess() || resp.GetGrade().GetJudgeStatus() != runnerpb.JudgeStatus_JUDGE_STATUS_COMPLETED {
				t.Fatalf("GradeTrial: %s (grade %v)", resp.GetError(), resp.GetGrade())
			}
			reqs := llmSrv.Requests()[before:]
			if len(reqs) != 1 || reqs[0].Authorization != tc.wantAuth {
				t.Fatalf("provider requests %d, Authorization %q; want one with %q", len(reqs), authOf(reqs), tc.wantAuth)
			}
			if f := filesContaining(t, h.work, hostKey); len(f) != 0 {
				t.Errorf("the host's key is written in %v", f)
			}
			c := h.cleanup(t, tc.id)
			answers = append(answers, prototext.Format(c))
			if !c.GetSuccess() {
				t.Fatalf("CleanupTrial: %s", c.GetError())
			}
		})
	}
	if strings.Contains(logs.text(), hostKey) {
		t.Errorf("the host's key is in the runner's logs:\n%s", logs.text())
	}
	if !strings.Contains(logs.text(), "trial registered") {
		t.Errorf("the log sink caught no registration: the search above proves nothing:\n%s", logs.text())
	}
	for _, a := range answers {
		if strings.Contains(a, hostKey) {
			t.Errorf("the host's key is in an answer: %s", a)
		}
	}
}

func authOf(reqs []fakellm.Request) string {
	if len(reqs) == 0 {
		return ""
	}
	return reqs[0].Authorization
}
