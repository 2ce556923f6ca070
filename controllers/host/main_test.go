package host_test

import (
	"testing"

	"tolokaforge.io/operator/test/mcpstandin"
)

// TestMain lets the test binary stand in for `tolokaforge mcp shop`: the
// runner resolves "tolokaforge" in the shop task's MCP command to
// StackConfig.SelfExecutable, which the tests set to this binary.
func TestMain(m *testing.M) { mcpstandin.Main(m) }
