package host_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"tolokaforge.io/operator/examples/shop"
)

// TestMain lets the test binary stand in for `tolokaforge mcp shop`: the
// runner resolves "tolokaforge" in the shop task's MCP command to
// StackConfig.SelfExecutable, which the tests set to this binary.
func TestMain(m *testing.M) {
	if len(os.Args) >= 3 && os.Args[1] == "mcp" && os.Args[2] == "shop" {
		if err := shop.Main(context.Background(), os.Args[3:]); err != nil {
			fmt.Fprintln(os.Stderr, "mcp shop:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
