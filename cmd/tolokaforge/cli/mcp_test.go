package cli

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// mcp shop hands the parsed options to the shop: a missing state file is the
// shop's error, before it touches stdio.
func TestMCPShopPassesTheStateFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.json")
	var stdout, stderr bytes.Buffer
	code := run([]string{"mcp", "shop", "--state", missing}, &stdout, &stderr)
	if code != 1 || !strings.HasPrefix(stderr.String(), "tolokaforge mcp: mcp shop: --state: open "+missing) {
		t.Fatalf("exit %d, stderr %q; want 1 and the shop's --state error", code, stderr.String())
	}
}

// Without a server's name, or with an unknown one, mcp says which there are.
func TestMCPWithoutAServer(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"mcp"}, "tolokaforge mcp: usage: tolokaforge mcp shop [--state FILE]\n"},
		{[]string{"mcp", "bank"}, "tolokaforge mcp: unknown MCP server \"bank\" (available: shop)\n"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(c.args, &stdout, &stderr); code != 1 || !strings.HasSuffix(stderr.String(), c.want) || stdout.Len() != 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 1 and %q", c.args, code, stdout.String(), stderr.String(), c.want)
		}
	}
}
