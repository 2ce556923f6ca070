package grading

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/proc"
)

// loopReported is the pid a verifier's detached loop printed ("LOOP <pid>").
var loopReported = regexp.MustCompile(`LOOP (\d+)`)

// A verifier that leaves a setsid'd loop with an empty environment behind
// (out of its process group and session, and out of reach of a tag search)
// does not outlive its grade: the verifier runs under a supervisor, which
// kills its whole tree when the verifier exits, and on a timeout.
func TestVerifierDetachedChildDiesWithTheGrade(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid(1) here")
	}
	// The loop prints its pid into the verifier's output, then lets go of it.
	const detach = `setsid env -i sh -c 'echo LOOP $$; exec >/dev/null 2>&1 </dev/null; while :; do sleep 0.02; done' & sleep 0.3; `
	for _, c := range []struct {
		name, script string
		timeout      float64
		wantErr      bool
	}{
		{name: "the verifier exits", script: detach + "exit 1"},
		{name: "the verifier times out", script: detach + "sleep 30", timeout: 1, wantErr: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			te := task.TestExecution{Command: sh(c.script), TimeoutS: c.timeout}
			env := testExecEnv(t, &te, nil)
			start := time.Now()
			g, err := New().Grade(context.Background(), env, Request{TerminationReason: "agent_done"})
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("grading took %s", d)
			}
			said := g.GetReasons()
			if c.wantErr {
				if err == nil {
					t.Fatalf("Grade = %v, want the timeout's error", g)
				}
				said = err.Error()
			} else if err != nil {
				t.Fatalf("Grade: %v", err)
			}
			m := loopReported.FindStringSubmatch(said)
			if m == nil {
				t.Fatalf("the verifier's output names no loop: %s", said)
			}
			pid, _ := strconv.Atoi(m[1])
			if _, err := os.Stat("/proc/" + m[1]); err == nil {
				stat, _ := os.ReadFile("/proc/" + m[1] + "/stat")
				t.Fatalf("the verifier's detached loop %d outlived its grade: %s", pid, stat)
			}
		})
	}
}

// The verifier writes its sandbox and its TMPDIR, and reads nothing of the
// runner's beyond the system: not a file beside the trial (another trial,
// the secrets), not the trial's own work folder outside the sandbox.
func TestVerifierIsConfinedToItsSandbox(t *testing.T) {
	if v, err := proc.LandlockABI(); err != nil {
		t.Skipf("no Landlock on this kernel (%v): nothing confines the verifier", err)
	} else {
		t.Logf("Landlock ABI %d", v)
	}
	secret := filepath.Join(t.TempDir(), "judge-api-key")
	writeFile(t, secret, "secret")
	script := `for p in "$SECRET" "$SITE"; do cat "$p" >/dev/null 2>&1 && echo "READ $p" || echo "DENIED"; done
echo mine > own.txt && cat own.txt
t=$(mktemp) && echo tmp > "$t" && cat "$t"
touch "$SITE.new" 2>/dev/null && echo "WROTE beside" || echo "DENIED"
exit 1`
	te := task.TestExecution{Command: sh(script)}
	env := testExecEnv(t, &te, nil)
	site := filepath.Join(env.site.Dir, "beside.txt")
	writeFile(t, site, "beside")
	env.site.Env = []string{"SECRET=" + secret, "SITE=" + site}
	g, err := New().Grade(context.Background(), env, Request{TerminationReason: "agent_done"})
	if err != nil {
		t.Fatalf("Grade: %v", err)
	}
	const want = `Test execution: score=0 (no reward file declared; verifier exit code 1); output tail: "DENIED\nDENIED\nmine\ntmp\nDENIED"`
	if got := g.GetReasons(); got != want {
		t.Errorf("reasons:\n got %s\nwant %s", got, want)
	}
	if _, err := os.Stat(site + ".new"); err == nil {
		t.Errorf("the verifier created %s.new beside its sandbox", site)
	}
	if left, _ := os.ReadDir(env.site.Dir); len(left) != 1 || !strings.HasSuffix(left[0].Name(), "beside.txt") {
		t.Errorf("the verifier's site after the grade holds %v, want only beside.txt (sandbox and TMPDIR removed)", left)
	}
}
