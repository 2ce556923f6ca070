package runnerpb

import "google.golang.org/grpc/metadata"

// ToolOutputTrailer is the gRPC trailer key carrying a tool call's whole
// output when the tool keeps more than the model is shown (a terminal task's
// bash: each stream cut to its head and tail in ExecuteToolResponse.output).
// The proto (byte-identical to the spec's) has no field for it; the host
// writes it as the call's artifact. "-bin": carried as bytes.
const ToolOutputTrailer = "tolokaforge-tool-output-bin"

// ToolOutputMD is the trailer metadata carrying out.
func ToolOutputMD(out []byte) metadata.MD {
	return metadata.Pairs(ToolOutputTrailer, string(out))
}

// ToolOutputFromMD reads the whole output a call left in its trailer (nil
// without one).
func ToolOutputFromMD(md metadata.MD) []byte { return lastBytes(md, ToolOutputTrailer) }

// TestOutputTrailer carries a terminal task's tests' whole output beside
// GradeTrial's response (Grade.reasons keeps its head and tail); the host
// writes it as the attempt's tests-output.txt.
const TestOutputTrailer = "tolokaforge-test-output-bin"

// TestOutputMD is the trailer metadata carrying out.
func TestOutputMD(out []byte) metadata.MD {
	return metadata.Pairs(TestOutputTrailer, string(out))
}

// TestOutputFromMD reads the tests' output a grade left in its trailer (nil
// without one).
func TestOutputFromMD(md metadata.MD) []byte { return lastBytes(md, TestOutputTrailer) }

// lastBytes is key's last value in md (nil without one).
func lastBytes(md metadata.MD, key string) []byte {
	vs := md.Get(key)
	if len(vs) == 0 {
		return nil
	}
	return []byte(vs[len(vs)-1])
}
