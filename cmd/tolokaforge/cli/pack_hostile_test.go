package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// aliasBomb is a 2 KB task.yaml whose aliases, expanded, are 10^9 nodes.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString(minimalTask)
	b.WriteString("lol0: &lol0 [lol]\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "lol%d: &lol%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*lol%d,", i-1), 10), ","))
	}
	// Padding to the reported 2 KB, as a comment.
	for b.Len() < 2000 {
		b.WriteString("# padding padding padding padding padding padding padding padding\n")
	}
	return b.String()
}

const bombChildEnv = "TOLOKAFORGE_TEST_ALIAS_BOMB_DIR"

// TestPackImportAliasBombChild is the child of TestPackImportAliasBomb: the
// whole `tolokaforge pack import` in a process of its own, whose resident
// set the parent reads.
func TestPackImportAliasBombChild(t *testing.T) {
	dir := os.Getenv(bombChildEnv)
	if dir == "" {
		t.Skip("run by TestPackImportAliasBomb")
	}
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := run([]string{"pack", "import", dir}, &stdout, &stderr)
	fmt.Printf("took=%d code=%d written=%d\nstderr=%s", time.Since(start).Nanoseconds(), code, stdout.Len(), stderr.String())
}

// The alias bomb: a 2 KB task.yaml drove `pack import` to 23.7 GB in
// 12 minutes. It is refused within 2 s, and the process that refuses it
// grows no more than 100 MB past the same process importing a small pack
// (peak resident sets from the kernel's rusage; the baseline is the test
// binary itself, about 200 MB under -race with everything it links).
func TestPackImportAliasBomb(t *testing.T) {
	doc := aliasBomb()
	if len(doc) > 2100 {
		t.Fatalf("the bomb is %d bytes", len(doc))
	}
	bomb := writePack(t, "bomb", map[string]string{"task.yaml": doc})
	fine := writePack(t, "fine", map[string]string{"task.yaml": minimalTask})
	baseOut, baseRSS := runImportChild(t, fine)
	if !strings.Contains(baseOut, "code=0 ") {
		t.Fatalf("the baseline import failed:\n%s", baseOut)
	}
	out, maxRSS := runImportChild(t, bomb)
	var took time.Duration
	var code, written int
	if _, err := fmt.Sscanf(out, "took=%d code=%d written=%d", &took, &code, &written); err != nil {
		t.Fatalf("child output %q: %v", out, err)
	}
	t.Logf("refused in %v, peak resident set %d MB (a small pack's import: %d MB)", took, maxRSS>>20, baseRSS>>20)
	want := "tolokaforge pack: pack import: bomb/task.yaml: line 14: aliases nest more than 5 deep (the alias depth budget); refused"
	if code != 1 || written != 0 || !strings.Contains(out, want) {
		t.Fatalf("exit %d, %d bytes written, output:\n%s\nwant the refusal %q", code, written, out, want)
	}
	if took > 2*time.Second {
		t.Fatalf("the refusal took %v, want under 2 s", took)
	}
	if maxRSS-baseRSS > 100<<20 {
		t.Fatalf("peak resident set %d bytes, %d past a small pack's import, want under 100 MB past", maxRSS, maxRSS-baseRSS)
	}
}

// runImportChild runs TestPackImportAliasBombChild on dir in a process of
// its own and returns its output and peak resident set in bytes.
func runImportChild(t *testing.T, dir string) (string, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestPackImportAliasBombChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), bombChildEnv+"="+dir, "GOMAXPROCS=2")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the import was still running after 20 s (killed): %s", out)
	}
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Skip("no rusage on this platform")
	}
	return string(out), ru.Maxrss * 1024 // kilobytes on Linux
}

// SIGTERM cancels the root's context: the import stops with the context's
// error and writes nothing.
func TestPackImportCanceled(t *testing.T) {
	dir := writePack(t, "fine", map[string]string{"task.yaml": minimalTask})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	err := runPack(ctx, []string{"import", dir}, &out, &errb, "")
	want := "pack import: canceled at " + dir + ", nothing written: context canceled"
	if !errors.Is(err, context.Canceled) || err.Error() != want || out.Len() != 0 {
		t.Fatalf("error %v (%d bytes written), want %q", err, out.Len(), want)
	}
}

// A link out of the pack is refused by the command, naming the link.
func TestPackImportRefusesLinkOut(t *testing.T) {
	dir := writePack(t, "evil", map[string]string{"task.yaml": minimalTask})
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "system_prompt.md")); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	err := runPack(context.Background(), []string{"import", dir}, &out, &errb, "")
	want := "pack import: evil/task.yaml: system_prompt: evil: system_prompt.md is a symbolic link to /etc/passwd, an absolute path (links must be relative and stay inside " + dir + "); refused"
	if err == nil || err.Error() != want || out.Len() != 0 {
		t.Fatalf("error %v (%d bytes written)\nwant %q", err, out.Len(), want)
	}
	if strings.Contains(out.String()+errb.String(), "root:") {
		t.Fatal("/etc/passwd reached the output")
	}
}
