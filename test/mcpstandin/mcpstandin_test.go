package mcpstandin

import (
	"context"
	"testing"

	"tolokaforge.io/operator/examples/shop"
)

func TestServeRefusesWhatItDoesNotServe(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mcp", "weather"}, `mcpstandin: unknown MCP server "weather": want shop or testkit`},
		{[]string{"nope"}, `mcpstandin: unknown MCP server "nope": want shop or testkit`},
		{[]string{"mcp", "testkit", "--x"}, `mcpstandin: mcp testkit takes no arguments, got ["--x"]`},
		{[]string{"mcp", "shop", "--state", "s.json"}, `mcpstandin: mcp shop takes its flags as shop.Options, got ["--state" "s.json"] (cmd/mcpstandin parses them)`},
	} {
		err := Serve(context.Background(), tc.args, shop.Options{})
		if err == nil || err.Error() != tc.want {
			t.Errorf("Serve(%q) = %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestAsked(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"bin", "mcp", "shop"}, true},
		{[]string{"bin", "mcp", "shop", "--state", "s.json"}, true},
		{[]string{"bin", "mcp", "testkit"}, true},
		{[]string{"bin", "mcp", "weather"}, false},
		{[]string{"bin", "-test.run", "X"}, false},
		{[]string{"bin"}, false},
	} {
		if got := asked(tc.args); got != tc.want {
			t.Errorf("asked(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}
