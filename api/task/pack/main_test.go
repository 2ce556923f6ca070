package pack

import (
	"context"
	"fmt"
	"os"
	"testing"

	"tolokaforge.io/operator/examples/shop"
)

// TestMain lets this test binary stand in for `tolokaforge mcp shop`: the
// runner starts MCP servers named "tolokaforge ..." with its
// SelfExecutable, which the tests point at os.Args[0].
func TestMain(m *testing.M) {
	if len(os.Args) >= 3 && os.Args[1] == "mcp" && os.Args[2] == "shop" {
		if err := shop.Main(context.Background(), os.Args[3:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func selfExecutable(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}
