package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"tolokaforge.io/operator/examples/shop"
)

// The command-line cases of examples/shop's TestMainRejectsBadArguments,
// which moved here with the flag parsing.
func TestMCPShopRejectsBadArguments(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"extra"}, `mcp shop: unexpected arguments ["extra"]`},
		{[]string{"--nope"}, "mcp shop: flag provided but not defined: -nope"},
	}
	for _, c := range cases {
		_, err := shopFlags(c.args, io.Discard)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("shopFlags(%q) = %v, want prefix %q", c.args, err, c.want)
		}
	}
}

func TestMCPShopFlags(t *testing.T) {
	cases := []struct {
		args []string
		want shop.Options
	}{
		{nil, shop.Options{}},
		{[]string{"--state", "s.json"}, shop.Options{StatePath: "s.json"}},
		{[]string{"-state=s.json"}, shop.Options{StatePath: "s.json"}},
	}
	for _, c := range cases {
		got, err := shopFlags(c.args, io.Discard)
		if err != nil || got != c.want {
			t.Errorf("shopFlags(%q) = %+v, %v; want %+v", c.args, got, err, c.want)
		}
	}
}

// runMCP hands the parsed options to the shop: a missing state file is the
// shop's error, before it touches stdio.
func TestMCPShopPassesTheStateFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.json")
	err := runMCP(context.Background(), []string{"shop", "--state", missing})
	if err == nil || !strings.HasPrefix(err.Error(), "mcp shop: --state: open "+missing) {
		t.Fatalf("runMCP = %v, want the shop's --state error", err)
	}
}
