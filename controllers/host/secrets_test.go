package host_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/controllers/host"
	"tolokaforge.io/operator/controllers/host/agents"
	"tolokaforge.io/operator/results/local"
	"tolokaforge.io/operator/test/fakellm"
)

const sentinel = "sk-sentinel-DO-NOT-LEAK"

// logBuffer captures every log line at any verbosity.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) logger() logr.Logger {
	return funcr.NewJSON(func(obj string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.buf.WriteString(obj + "\n")
	}, funcr.Options{Verbosity: 10})
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func TestSentinelKeyAppearsNowhere(t *testing.T) {
	logs := &logBuffer{}
	log := logs.logger()
	work := t.TempDir()
	s := startStackIn(t, local.StackConfig{Log: log}, work)
	f, err := fakellm.New(fakellm.Config{APIKey: sentinel, Scripts: map[string][]fakellm.Reply{
		"ok": {
			{Status: 429, RetryAfter: "0", ErrorMessage: "slow down, " + sentinel},
			calcCall("c1", "1+1"), text("2 ###STOP###"),
		},
		"echo": {{Status: 400, ErrorMessage: "Incorrect API key provided: " + sentinel}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(""); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := t.TempDir()
	getenv := func(k string) string {
		if k == "AGENT_KEY" {
			return sentinel
		}
		return ""
	}
	var results []string
	for i, model := range []string{"ok", "echo"} {
		td := calcTask(t)
		cfg := &task.ModelConfig{Provider: task.ProviderOpenAI, Model: model, BaseURL: f.URL(), APIKeyEnv: "AGENT_KEY"}
		spec := specFor(s, td, cfg)
		agent, err := agents.NewAgent(spec, agents.Options{Getenv: getenv, Log: log, Sleep: noSleep})
		if err != nil {
			t.Fatal(err)
		}
		ac := attempt(s, spec, agent, nil)
		ac.ArtifactsDir, ac.TrialIndex, ac.Log = out, i, log
		res := host.RunAttempt(ctxT(t), ac)
		results = append(results, fmt.Sprintf("%+v\n%#v\n%s", res, res, res.Message))
		switch model {
		case "ok":
			if res.GradedBy != host.GradedByRunner || res.AgentUsage.Retries != 1 {
				t.Fatalf("%s: %s", res, res.Message)
			}
		case "echo":
			if res.GradedBy != host.GradedByHost || !strings.HasSuffix(res.Message, "Incorrect API key provided: [REDACTED]") {
				t.Fatalf("%s: %s", res, res.Message)
			}
		}
	}
	// The provider did receive it: the test would prove nothing otherwise.
	if got := f.RequestsFor("ok")[0].Authorization; got != "Bearer "+sentinel {
		t.Fatalf("Authorization = %q", got)
	}
	if !strings.Contains(logs.String(), "provider call refused, retrying") {
		t.Fatalf("the retry was not logged; logs:\n%s", logs.String())
	}
	where := map[string]string{"logs": logs.String(), "results": strings.Join(results, "\n")}
	for _, root := range []string{out, work} {
		n := 0
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			where[p] = string(b)
			n++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if root == out && n != 12 { // 3 files x (top level + attempts/1) x 2 trials
			t.Fatalf("%d artifact files under %s, want 12", n, out)
		}
	}
	for name, content := range where {
		if strings.Contains(content, sentinel) {
			t.Errorf("the API key leaked into %s", name)
		}
	}
}
