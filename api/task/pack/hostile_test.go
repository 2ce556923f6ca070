package pack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"tolokaforge.io/operator/runner/tools/builtin"
)

// hostilePack writes a pack "evil" with files, a sibling directory
// "outside" holding secrets, and links (path in the pack -> target).
func hostilePack(t *testing.T, files, links map[string]string) (dir, outside string) {
	t.Helper()
	dir = writePack(t, "evil", files)
	outside = filepath.Join(filepath.Dir(dir), "outside")
	for name, content := range map[string]string{
		"secret.md":           "SECRET prompt from outside the pack",
		"grading.yaml":        "transcript_rules: {must_contain: [SECRET]}\n",
		"db.json":             `{"secrets": [{"id": "SECRET"}]}`,
		"tools.json":          `[{"name": "SECRET", "description": "x", "parameters": {}}]`,
		"fixtures/tools.json": `[{"name": "SECRET", "description": "x", "parameters": {}}]`,
		"srv.py":              "SECRET = 1\n",
	} {
		p := filepath.Join(outside, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range links {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(strings.ReplaceAll(target, "OUTSIDE", outside), p); err != nil {
			t.Fatal(err)
		}
	}
	return dir, outside
}

// A link out of the pack is refused naming the link (its path in the pack)
// and where it points; nothing it points at reaches the Task.
func TestConvertRefusesLinksOutOfThePack(t *testing.T) {
	withDB := minimalTask + "initial_state: {json_db: state/db.json}\n"
	withScript := "task_id: py\nname: n\ncategory: c\ndescription: d\ntools:\n  agent:\n    mcp_server: srv.py\n    enabled: [refund]\n"
	refund := `[{"name": "refund", "description": "r", "parameters": {"type": "object"}}]`
	for _, tc := range []struct {
		name  string
		files map[string]string
		links map[string]string
		want  string // OUTSIDE and DIR stand for the two directories
	}{
		{"system prompt to /etc/passwd", map[string]string{"task.yaml": minimalTask}, map[string]string{"system_prompt.md": "/etc/passwd"},
			"evil/task.yaml: system_prompt: evil: system_prompt.md is a symbolic link to /etc/passwd, an absolute path (links must be relative and stay inside DIR); refused"},
		{"system prompt climbing out", map[string]string{"task.yaml": minimalTask + "system_prompt: prompt.md\n"}, map[string]string{"prompt.md": "../outside/secret.md"},
			"evil/task.yaml: system_prompt: evil: prompt.md is a symbolic link to ../outside/secret.md, outside DIR; refused"},
		{"task.yaml itself", nil, map[string]string{"task.yaml": "../outside/grading.yaml"},
			"evil: task.yaml is a symbolic link to ../outside/grading.yaml, outside DIR; refused"},
		{"grading.yaml", map[string]string{"task.yaml": minimalTask}, map[string]string{"grading.yaml": "OUTSIDE/grading.yaml"},
			"evil/task.yaml: grading: evil: grading.yaml is a symbolic link to OUTSIDE/grading.yaml, an absolute path"},
		{"a symlinked directory holding the tables", map[string]string{"task.yaml": withDB}, map[string]string{"state": "../outside"},
			"evil/task.yaml: initial_state.json_db: evil: state/db.json: state is a symbolic link to ../outside, outside DIR; refused"},
		{"a symlinked fixtures directory", map[string]string{"task.yaml": minimalTask}, map[string]string{"fixtures": "../outside/fixtures"},
			"evil: fixtures/tools.json: fixtures is a symbolic link to ../outside/fixtures, outside DIR; refused"},
		{"tools.json", map[string]string{"task.yaml": minimalTask}, map[string]string{"tools.json": "../outside/tools.json"},
			"evil: tools.json is a symbolic link to ../outside/tools.json, outside DIR; refused"},
		{"the MCP script shipped with the task", map[string]string{"task.yaml": withScript, "fixtures/tools.json": refund}, map[string]string{"srv.py": "../outside/srv.py"},
			"evil/task.yaml: tools.agent.mcp_server: evil: srv.py is a symbolic link to ../outside/srv.py, outside DIR; refused"},
		{"a link to a link out", map[string]string{"task.yaml": minimalTask}, map[string]string{"system_prompt.md": "docs/hop.md", "docs/hop.md": "../../outside/secret.md"},
			"evil/task.yaml: system_prompt: evil: system_prompt.md: docs/hop.md is a symbolic link to ../../outside/secret.md, outside DIR; refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, outside := hostilePack(t, tc.files, tc.links)
			c, err := Convert(dir, Options{Builtins: builtin.Catalog{}})
			want := strings.NewReplacer("OUTSIDE", outside, "DIR", dir).Replace(tc.want)
			if err == nil {
				t.Fatalf("converted (system prompt %q); want %q", c.Description.SystemPrompt, want)
			}
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q\nwant it to contain %q", err, want)
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Fatalf("the error carries the outside file's content: %v", err)
			}
		})
	}
}

// Links that stay inside the pack are followed: packs share files that way.
func TestConvertFollowsLinksInsideThePack(t *testing.T) {
	dir, _ := hostilePack(t, map[string]string{
		"task.yaml":         minimalTask + "initial_state: {json_db: state/db.json}\n",
		"shared/prompt.md":  "the shared prompt",
		"shared/state.json": `{"orders": [{"id": "o1"}]}`,
	}, map[string]string{"system_prompt.md": "shared/prompt.md", "state": "shared", "shared/db.json": "state.json"})
	c, err := Convert(dir, Options{Builtins: builtin.Catalog{}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Description.SystemPrompt != "the shared prompt" || string(c.Tables) != `{"orders":[{"id":"o1"}]}` {
		t.Fatalf("prompt %q tables %s", c.Description.SystemPrompt, c.Tables)
	}
}

// A FIFO would block the import forever; a huge file would be read whole.
func TestConvertRefusesOddFiles(t *testing.T) {
	dir := writePack(t, "odd", map[string]string{"task.yaml": minimalTask})
	if err := syscall.Mkfifo(filepath.Join(dir, "system_prompt.md"), 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	done := make(chan error, 1)
	go func() { _, err := Convert(dir, Options{Builtins: builtin.Catalog{}}); done <- err }()
	select {
	case err := <-done:
		want := "odd/task.yaml: system_prompt: odd: system_prompt.md is not a regular file (a named pipe)"
		if err == nil || err.Error() != want {
			t.Fatalf("error %v, want %q", err, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the import blocked on a FIFO")
	}

	big := writePack(t, "big", map[string]string{"task.yaml": minimalTask})
	f, err := os.Create(filepath.Join(big, "system_prompt.md"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(maxFileBytes + 1); err != nil { // sparse: no disk spent
		t.Fatal(err)
	}
	f.Close()
	_, err = Convert(big, Options{Builtins: builtin.Catalog{}})
	want := fmt.Sprintf("big/task.yaml: system_prompt: big: system_prompt.md is %d bytes, over the limit of %d bytes", maxFileBytes+1, maxFileBytes)
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
}

// bomb is a billion-laughs document: levels of anchors, each a list of
// fanout aliases of the one before.
func bomb(levels, fanout int) string {
	var b strings.Builder
	b.WriteString(minimalTask)
	b.WriteString("l0: &l0 [lol]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [", i, i)
		for j := 0; j < fanout; j++ {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "*l%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

func TestAliasBudget(t *testing.T) {
	deep := bomb(9, 10) // 10^9 nodes, nine deep
	wide := bomb(4, 90) // 6.5*10^7 nodes, four deep: the depth budget alone would let it through
	if len(deep) > 2048 || len(wide) > 2048 {
		t.Fatalf("bombs of %d and %d bytes; the point is that 2 KB is enough", len(deep), len(wide))
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"deep bomb in task.yaml", map[string]string{"task.yaml": deep},
			fmt.Sprintf("bomb/task.yaml: line 14: aliases nest more than %d deep (the alias depth budget); refused", maxAliasDepth)},
		{"wide bomb in task.yaml", map[string]string{"task.yaml": wide},
			fmt.Sprintf("bomb/task.yaml: aliases expand to more than %d nodes (the alias budget); refused as an alias bomb", maxAliasNodes)},
		{"bomb in grading.yaml", map[string]string{"task.yaml": minimalTask + "grading: grading.yaml\n", "grading.yaml": strings.TrimPrefix(wide, minimalTask)},
			"bomb/grading.yaml: aliases expand to more than 10000 nodes"},
		{"bomb in tools.json", map[string]string{"task.yaml": minimalTask, "fixtures/tools.json": "[" + strings.ReplaceAll(strings.TrimSuffix(strings.TrimPrefix(wide, minimalTask), "\n"), "\n", ", ") + "]"},
			"bomb/fixtures/tools.json: aliases expand to more than 10000 nodes"},
		{"cycle", map[string]string{"task.yaml": minimalTask + "x: &x [1, *x]\n"},
			"bomb/task.yaml: line 8: alias *x refers to a node that contains it (a cycle); refused"},
		{"cycle through a mapping", map[string]string{"task.yaml": minimalTask + "metadata: &m {self: {again: *m}}\n"},
			"bomb/task.yaml: line 8: alias *m refers to a node that contains it (a cycle); refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writePack(t, "bomb", tc.files)
			done := make(chan error, 1)
			go func() { _, err := Convert(dir, Options{Builtins: builtin.Catalog{}}); done <- err }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v\nwant it to contain %q", err, tc.want)
				}
			case <-time.After(10 * time.Second):
				// The goroutine keeps expanding; end the binary rather
				// than let it take the machine's memory.
				panic("the alias bomb was expanded: no refusal within 10 s")
			}
		})
	}
}

// Anchors within the budget are ordinary YAML and convert as written.
func TestAliasesWithinBudget(t *testing.T) {
	dir := writePack(t, "shared", map[string]string{
		"task.yaml": minimalTask + "metadata: {a: &d {x: 1, y: [1, 2]}, b: *d, c: *d}\n",
	})
	c, err := Convert(dir, Options{Builtins: builtin.Catalog{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(c.Description.Metadata["c"]); got != `{"x":1,"y":[1,2]}` {
		t.Fatalf("metadata.c %s", got)
	}
	n, err := parseYAML(context.Background(), []byte(bomb(maxAliasDepth, 2)))
	if err != nil || n == nil {
		t.Fatalf("a chain exactly %d deep: %v", maxAliasDepth, err)
	}
}

// The 2 KB bomb is refused in bounded time and memory, measured.
func TestAliasBombBoundedMemory(t *testing.T) {
	for _, doc := range []string{bomb(9, 10), bomb(4, 90)} {
		dir := writePack(t, "bomb", map[string]string{"task.yaml": doc})
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		_, err := Convert(dir, Options{Builtins: builtin.Catalog{}})
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Fatal("converted")
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 20<<20 || took > 2*time.Second {
			t.Fatalf("allocated %d bytes in %v", alloc, took)
		}
	}
}

// bigPack is a pack whose initial state takes a while to convert.
func bigPack(t *testing.T, rows int) string {
	var b strings.Builder
	b.WriteString(`{"orders": [`)
	for i := 0; i < rows; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"id": "o%d", "total": %d.50, "items": ["a", "b", {"sku": %d}]}`, i, i, i)
	}
	b.WriteString("]}")
	return writePack(t, "big", map[string]string{
		"task.yaml": minimalTask + "initial_state: {json_db: db.json}\n",
		"db.json":   b.String(),
	})
}

// cancelAfter is a context that reports itself canceled from its n-th Err
// call on, and counts the calls after that: a cancellation that lands in
// the middle of an import, at a point the test decides, not a timer.
type cancelAfter struct {
	context.Context
	n, calls int
}

func (c *cancelAfter) Err() error {
	c.calls++
	if c.calls >= c.n {
		return context.Canceled
	}
	return nil
}

func TestConvertHonoursCancellation(t *testing.T) {
	dir := bigPack(t, 20000)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ConvertContext(ctx, dir, Options{Builtins: builtin.Catalog{}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled before it started: %v", err)
	}
	// Canceled while the tables are read, at the 500th check: the import
	// stops at that check, not at the end of the table.
	mid := &cancelAfter{Context: context.Background(), n: 500}
	_, err := ConvertContext(mid, dir, Options{Builtins: builtin.Catalog{}})
	if !errors.Is(err, context.Canceled) || err.Error() != "big/db.json: context canceled" {
		t.Fatalf("error %v, want big/db.json: context canceled", err)
	}
	if mid.calls != mid.n {
		t.Fatalf("the import went on for %d checks after the cancellation", mid.calls-mid.n)
	}
}

// A large YAML file is parsed through a reader that checks ctx, so a
// cancellation ends the parse itself.
func TestParseYAMLHonoursCancellation(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(&b, "k%d: [1, 2, 3]\n", i)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := parseYAML(ctx, []byte(b.String())); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	mid := &cancelAfter{Context: context.Background(), n: 10}
	if _, err := parseYAML(mid, []byte(b.String())); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled mid-parse: error %v, want context.Canceled", err)
	}
	if mid.calls > mid.n+3 { // the reader, the parser's retry, parseYAML's own check
		t.Fatalf("the parse went on for %d reads after the cancellation", mid.calls-mid.n)
	}
}
