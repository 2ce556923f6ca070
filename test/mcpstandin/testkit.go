package mcpstandin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// kit is a small stateful MCP server: its tables follow Tolokaforge's state
// convention, and its tools exercise what the runner must survive.
type kit struct {
	mu     sync.Mutex
	tables map[string]json.RawMessage
}

func testkit(ctx context.Context) error {
	if pf := os.Getenv("TESTKIT_PIDFILE"); pf != "" {
		// A helper in the server's process group: cleanup must kill it too.
		helper := exec.Command("sleep", "300")
		if err := helper.Start(); err != nil {
			return fmt.Errorf("start helper: %w", err)
		}
		f, err := os.OpenFile(pf, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		fmt.Fprintf(f, "%d %d\n", os.Getpid(), helper.Process.Pid)
		f.Close()
	}
	fmt.Fprintln(os.Stderr, "testkit: serving")
	k := &kit{tables: map[string]json.RawMessage{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "testkit", Version: "1.0.0"}, nil)
	obj := func(props string, required ...string) json.RawMessage {
		req, _ := json.Marshal(required)
		if required == nil {
			req = []byte("[]")
		}
		return json.RawMessage(`{"type":"object","properties":{` + props + `},"required":` + string(req) + `}`)
	}
	add := func(name string, schema json.RawMessage, h func(ctx context.Context, args map[string]any) (string, error)) {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: schema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			args := map[string]any{}
			if len(req.Params.Arguments) > 0 {
				dec := json.NewDecoder(bytes.NewReader(req.Params.Arguments))
				dec.UseNumber()
				if err := dec.Decode(&args); err != nil {
					return textResult(err.Error(), true), nil
				}
			}
			out, err := h(ctx, args)
			if err != nil {
				return textResult(err.Error(), true), nil
			}
			return textResult(out, false), nil
		})
	}
	add("echo", obj(`"text":{"type":"string"}`, "text"), func(_ context.Context, a map[string]any) (string, error) {
		return fmt.Sprint(a["text"]), nil
	})
	add("sleep", obj(`"seconds":{"type":"number"}`, "seconds"), func(ctx context.Context, a map[string]any) (string, error) {
		n, _ := a["seconds"].(json.Number).Float64()
		select {
		case <-time.After(time.Duration(n * float64(time.Second))):
		case <-ctx.Done():
		}
		return "slept", nil
	})
	add("pid", obj(``), func(context.Context, map[string]any) (string, error) {
		return strconv.Itoa(os.Getpid()), nil
	})
	add("getenv", obj(`"name":{"type":"string"}`, "name"), func(_ context.Context, a map[string]any) (string, error) {
		return os.Getenv(fmt.Sprint(a["name"])), nil
	})
	add("cwd", obj(``), func(context.Context, map[string]any) (string, error) {
		return os.Getwd()
	})
	add("fail", obj(`"message":{"type":"string"}`, "message"), func(_ context.Context, a map[string]any) (string, error) {
		return "", errors.New(fmt.Sprint(a["message"]))
	})
	add("incr", obj(`"key":{"type":"string"}`, "key"), k.incr)
	add("exit", obj(``), func(context.Context, map[string]any) (string, error) {
		os.Exit(3) // a crashed server: the call never gets an answer
		return "", nil
	})
	add("_tolokaforge_get_state_", obj(``), func(context.Context, map[string]any) (string, error) {
		k.mu.Lock()
		defer k.mu.Unlock()
		b, err := json.Marshal(k.tables)
		return string(b), err
	})
	add("_tolokaforge_set_state_", obj(`"state":{"type":"object"}`, "state"), func(_ context.Context, a map[string]any) (string, error) {
		raw, err := json.Marshal(a["state"])
		if err != nil {
			return "", err
		}
		tables := map[string]json.RawMessage{}
		if err := json.Unmarshal(raw, &tables); err != nil {
			return "", err
		}
		k.mu.Lock()
		k.tables = tables
		k.mu.Unlock()
		return `{"status": "ok"}`, nil
	})
	err := srv.Run(ctx, &mcp.StdioTransport{})
	if err == nil || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// incr adds one to counters[key].n, creating the record at 1.
func (k *kit) incr(_ context.Context, a map[string]any) (string, error) {
	key := fmt.Sprint(a["key"])
	k.mu.Lock()
	defer k.mu.Unlock()
	var rows []map[string]any
	if raw, ok := k.tables["counters"]; ok {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&rows); err != nil {
			return "", err
		}
	}
	n := int64(0)
	found := false
	for _, r := range rows {
		if r["id"] == key {
			v, _ := r["n"].(json.Number).Int64()
			n = v + 1
			r["n"] = n
			found = true
		}
	}
	if !found {
		n = 1
		rows = append(rows, map[string]any{"id": key, "n": n})
	}
	raw, err := json.Marshal(rows)
	if err != nil {
		return "", err
	}
	k.tables["counters"] = raw
	return strconv.FormatInt(n, 10), nil
}

func textResult(text string, isError bool) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: isError}
}
