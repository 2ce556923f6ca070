package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// Every spelling reaches the shop with its flags parsed, or is refused
// before stdio is touched.
func TestRunParsesTheShopFlags(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.json")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mcp", "shop", "--state", missing}, "mcp shop: --state: open " + missing},
		{[]string{"shop", "--state", missing}, "mcp shop: --state: open " + missing},
		{[]string{"--state", missing}, "mcp shop: --state: open " + missing},
		{[]string{"mcp", "shop", "--nope"}, "mcp shop: flag provided but not defined: -nope"},
		{[]string{"shop", "extra"}, `mcp shop: unexpected arguments ["extra"]`},
		{[]string{"mcp", "testkit", "--x"}, `mcpstandin: mcp testkit takes no arguments, got ["--x"]`},
		{[]string{"mcp", "weather"}, `mcpstandin: unknown MCP server "weather": want shop or testkit`},
	} {
		err := run(context.Background(), tc.args, io.Discard)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("run(%q) = %v, want prefix %q", tc.args, err, tc.want)
		}
	}
}
