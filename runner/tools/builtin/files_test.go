package builtin_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tolokaforge.io/operator/runner/tools"
	"tolokaforge.io/operator/runner/tools/builtin"
)

func call(t *testing.T, env builtin.Env, name, args string) (string, error) {
	t.Helper()
	b, ok := builtin.Lookup(name)
	if !ok {
		t.Fatalf("no builtin %s", name)
	}
	return b.New(env).Call(context.Background(), json.RawMessage(args))
}

func TestFileToolsStayInTheirRoot(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "files")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "secret.txt"), []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "secret.txt"), filepath.Join(root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(base, filepath.Join(root, "up")); err != nil {
		t.Fatal(err)
	}
	env := builtin.Env{Root: root}

	if out, err := call(t, env, "write_file", `{"path":"a/b/c.txt","content":"héllo"}`); err != nil || out != "Wrote 6 bytes to a/b/c.txt" {
		t.Fatalf("write: %q %v", out, err)
	}
	if out, err := call(t, env, "read_file", `{"path":"./a/b/c.txt"}`); err != nil || out != "héllo" {
		t.Fatalf("read: %q %v", out, err)
	}
	if out, err := call(t, env, "list_dir", `{}`); err != nil || out != `["a/","link.txt","up"]` {
		t.Fatalf("list: %q %v", out, err)
	}
	if out, err := call(t, env, "list_dir", `{"path":"a/b"}`); err != nil || out != `["c.txt"]` {
		t.Fatalf("list a/b: %q %v", out, err)
	}

	refusals := []struct {
		tool, args, want string
		argErr           bool
	}{
		{"read_file", `{"path":"../secret.txt"}`, `arguments.path: "../secret.txt" contains '..'; paths may not leave the working directory`, true},
		{"read_file", `{"path":"a/../../secret.txt"}`, `arguments.path: "a/../../secret.txt" contains '..'; paths may not leave the working directory`, true},
		{"write_file", `{"path":"/etc/passwd","content":"x"}`, `arguments.path: "/etc/passwd" is absolute; give a path relative to the working directory`, true},
		{"list_dir", `{"path":".."}`, `arguments.path: ".." contains '..'; paths may not leave the working directory`, true},
		{"read_file", `{"path":"link.txt"}`, "read link.txt: the path leaves the working directory (through a symlink)", false},
		{"read_file", `{"path":"up/secret.txt"}`, "read up/secret.txt: the path leaves the working directory (through a symlink)", false},
		{"write_file", `{"path":"up/planted.txt","content":"x"}`, "write up/planted.txt: the path leaves the working directory (through a symlink)", false},
		{"read_file", `{"path":"missing.txt"}`, "read missing.txt: no such file or directory", false},
		{"read_file", `{"path":"a"}`, "read a: is a directory", false},
		{"read_file", `{"path":"a","extra":1}`, `arguments: unknown argument "extra"`, true},
		{"write_file", `{"path":"x.txt"}`, "arguments.content: required", true},
		{"read_file", `{"path":""}`, "arguments.path: required", true},
	}
	for _, r := range refusals {
		out, err := call(t, env, r.tool, r.args)
		var ae *tools.ArgumentError
		if err == nil || err.Error() != r.want || errors.As(err, &ae) != r.argErr {
			t.Errorf("%s %s = %q, %v; want error %q (argument error %v)", r.tool, r.args, out, err, r.want, r.argErr)
		}
	}
	if _, err := os.Stat(filepath.Join(base, "planted.txt")); err == nil {
		t.Error("write_file escaped through a symlink")
	}
	if b, _ := os.ReadFile(filepath.Join(base, "secret.txt")); string(b) != "outside" {
		t.Error("file outside the root changed")
	}
}

func TestFileToolsWithoutRoot(t *testing.T) {
	_, err := call(t, builtin.Env{}, "read_file", `{"path":"a"}`)
	if err == nil || err.Error() != "no working directory is configured for this trial" {
		t.Fatalf("got %v", err)
	}
}

func TestChatTools(t *testing.T) {
	if out, err := call(t, builtin.Env{}, "think", `{"thought":"the order total is 158.99"}`); err != nil || out != "" {
		t.Fatalf("think: %q %v", out, err)
	}
	if out, err := call(t, builtin.Env{}, "transfer_to_human_agents", `{"summary":"refund over policy"}`); err != nil || out != "Transfer successful" {
		t.Fatalf("transfer: %q %v", out, err)
	}
	if _, err := call(t, builtin.Env{}, "think", `{"thought":5}`); err == nil || !strings.HasPrefix(err.Error(), "arguments.thought: want string") {
		t.Fatalf("think with a number: %v", err)
	}
}

func TestCatalogSchemasAreValid(t *testing.T) {
	want := "calculator,db_delete,db_find,db_get,db_insert,db_update,list_dir,read_file,think,transfer_to_human_agents,write_file"
	if got := strings.Join(builtin.Names(), ","); got != want {
		t.Fatalf("Names() = %s", got)
	}
	for _, n := range builtin.Names() {
		b, _ := builtin.Lookup(n)
		if b.Description == "" || b.Category == "" {
			t.Errorf("%s: missing description or category", n)
		}
		if _, err := tools.NewValidator(b.Parameters); err != nil {
			t.Errorf("%s: schema: %v", n, err)
		}
	}
}
