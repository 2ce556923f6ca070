package host_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"tolokaforge.io/operator/dbservice"
	"tolokaforge.io/operator/runner"
	"tolokaforge.io/operator/test/mcpstandin"
)

// TestMain lets the test binary stand in for `tolokaforge mcp shop`: the
// runner resolves "tolokaforge" in the shop task's MCP command to
// StackConfig.SelfExecutable, which the tests set to this binary. Re-run as
// `TESTBINARY dbservice|runner FLAGS` it is that service, so the fault tests
// can kill -9 and SIGSTOP real processes.
func TestMain(m *testing.M) {
	mcpstandin.ServeIfAsked()
	if len(os.Args) >= 2 {
		var serve func(context.Context, []string) error
		switch os.Args[1] {
		case "dbservice":
			serve = dbservice.Main
		case "runner":
			serve = runner.Main
		}
		if serve != nil {
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
			err := serve(ctx, os.Args[2:])
			stop()
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			os.Exit(0)
		}
	}
	os.Exit(m.Run())
}
