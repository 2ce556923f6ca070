package shop

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"tolokaforge.io/operator/api/canonical"
)

// Names of Tolokaforge's state-convention tools. The runner hides them from the LLM.
const (
	getStateTool = "_tolokaforge_get_state_"
	SetStateTool = "_tolokaforge_set_state_"
)

//go:embed shop_orders_02/fixtures/tools.json
var toolsJSON []byte

// toolSpec is one entry of tools.json: the schema the LLM sees.
type toolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// toolSpecs is parsed once from the embedded tools.json. The file is fixed at build
// time and TestToolsJSON covers it, so a failure here is a build defect.
var toolSpecs = func() []toolSpec {
	var specs []toolSpec
	if err := json.Unmarshal(toolsJSON, &specs); err != nil {
		panic(fmt.Sprintf("shop: embedded tools.json: %v", err))
	}
	return specs
}()

var (
	getStateSchema = json.RawMessage(`{"type":"object","properties":{}}`)
	setStateSchema = json.RawMessage(`{"type":"object","properties":{"state":{"type":"object","description":"The tables: {table: [record, ...]}"}},"required":["state"]}`)
)

// server holds the shop state behind a lock: the SDK may run requests concurrently.
type server struct {
	mu    sync.Mutex
	state State
}

// NewServer returns an MCP server for the shop, starting from a copy of initial.
// Each server has its own state; every session connected to it shares that state.
func NewServer(initial State) *mcp.Server {
	return newServer(initial, nil)
}

func newServer(initial State, logger *slog.Logger) *mcp.Server {
	s := &server{state: initial.Clone()}
	srv := mcp.NewServer(&mcp.Implementation{Name: "tolokaforge-shop", Version: "1.0.0"}, &mcp.ServerOptions{Logger: logger})
	for _, spec := range toolSpecs {
		fn, ok := toolFuncs[spec.Name]
		if !ok {
			panic(fmt.Sprintf("shop: tools.json names %q, which has no implementation", spec.Name))
		}
		srv.AddTool(&mcp.Tool{Name: spec.Name, Description: spec.Description, InputSchema: spec.Parameters}, s.handler(spec.Name, fn))
	}
	srv.AddTool(&mcp.Tool{
		Name:        getStateTool,
		Description: "Tolokaforge state convention: return the tables as a JSON object.",
		InputSchema: getStateSchema,
	}, s.getState)
	srv.AddTool(&mcp.Tool{
		Name:        SetStateTool,
		Description: "Tolokaforge state convention: replace the tables with {\"state\": {table: [record, ...]}}.",
		InputSchema: setStateSchema,
	}, s.setState)
	return srv
}

func (s *server) handler(name string, fn toolFunc) mcp.ToolHandler {
	return func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, err := decodeArgs(name, req.Params.Arguments)
		if err != nil {
			return errorResult(err), nil
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		out, err := fn(&s.state, args)
		if err != nil {
			return errorResult(err), nil
		}
		// json.dumps(result): default separators, the records' own key order.
		return textResult(string(canonical.Dump(out, canonical.DumpOptions{}))), nil
	}
}

func (s *server) getState(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	text, err := s.state.MarshalJSON()
	if err != nil {
		return errorResult(fmt.Errorf("encode state: %w", err)), nil
	}
	return textResult(string(text)), nil
}

func (s *server) setState(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args, err := decodeArgs(SetStateTool, req.Params.Arguments)
	if err != nil {
		return errorResult(err), nil
	}
	v, ok := args.Get("state")
	if !ok {
		return errorResult(&argError{SetStateTool, "state is required"}), nil
	}
	st, err := stateFromValue(v, "state")
	if err != nil {
		return errorResult(&argError{SetStateTool, err.Error()}), nil
	}
	s.mu.Lock()
	s.state = st
	s.mu.Unlock()
	return textResult(`{"status": "ok"}`), nil
}

func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

func errorResult(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}, IsError: true}
}
