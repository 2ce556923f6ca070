package runner_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/examples/shop"
)

// TestMCPOverStreamableHTTP points the shop task at a server reached by URL
// instead of a subprocess: same tools, same state convention, same digests.
func TestMCPOverStreamableHTTP(t *testing.T) {
	srv := shop.NewServer(shop.State{})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer ts.Close()

	// json.Number keeps 300.0 a float literal: the hash tells 300 from 300.0.
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(shop.TaskJSON()))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	for _, tl := range doc["agent_tools"].([]any) {
		tl.(map[string]any)["source"].(map[string]any)["extra"] = obj{"url": ts.URL}
	}
	h := startRunner(t, nil)
	h.mustRegister(t, "http", doc)
	if st := h.state(t, "http", false); st.GetStableHash() != shopInitialHash {
		t.Fatalf("initial hash %s", st.GetStableHash())
	}
	for i, g := range shopGolden {
		g.callID = fmt.Sprint(i)
		h.mustExec(t, "http", g)
	}
	if st := h.state(t, "http", false); st.GetStableHash() != shopGoldenHash {
		t.Fatalf("golden hash %s", st.GetStableHash())
	}
	// Reset pushes the initial tables back into the remote server.
	if r, err := h.c.ResetTrial(ctxT(t), &runnerpb.ResetTrialRequest{TrialId: "http"}); err != nil || r.GetStateHash() != shopInitialHash {
		t.Fatalf("reset: %v %+v", err, r)
	}
	for i, g := range shopGolden {
		g.callID = fmt.Sprint("again-", i)
		h.mustExec(t, "http", g)
	}
	if st := h.state(t, "http", false); st.GetStableHash() != shopGoldenHash {
		t.Fatalf("golden hash after reset %s", st.GetStableHash())
	}
}

// TestMCPServerScriptFromToolArtifacts runs an MCP server shipped in the task's
// tool_artifacts, named by a relative mcp_server_script.
func TestMCPServerScriptFromToolArtifacts(t *testing.T) {
	script := fmt.Sprintf("#!/bin/sh\nexec %q mcp testkit\n", selfBin)
	src := obj{"toolset": "kit", "module_path": "", "class_name": "", "invocation_style": "mcp_server", "mcp_server_script": "bin/server.sh"}
	doc := baseTask([]any{tool("echo", "source", src)}, nil, nil)
	doc["tool_artifacts"] = obj{"bin/server.sh": base64.StdEncoding.EncodeToString([]byte(script))}
	h := startRunner(t, nil)
	h.mustRegister(t, "script", doc)
	if got := h.mustExec(t, "script", call{tool: "echo", args: `{"text":"from the artifact"}`, callID: "1"}); got != "from the artifact" {
		t.Fatalf("echo = %q", got)
	}
	h.cleanup(t, "script")

	// An artifact path leaving the trial's directory is refused.
	bad := baseTask([]any{tool("think")}, nil, nil)
	bad["tool_artifacts"] = obj{"../evil.sh": "AA=="}
	r := h.registerRaw(t, &runnerpb.RegisterTrialRequest{TrialId: "bad", TrialSpecJson: specJSON(t, "bad", bad), EngineProtocolVersion: task.EngineProtocolVersion})
	if want := `provision trial directory: task.tool_artifacts["../evil.sh"]: "../evil.sh" contains '..'; paths may not leave the working directory`; r.GetSuccess() || r.GetError() != want {
		t.Fatalf("got %v %q\nwant %q", r.GetSuccess(), r.GetError(), want)
	}
	assertNothingLeft(t, h, "bad")
}
