// Package pyhost is the runner's client of the Python tool host: host.py, a
// standard-library Python program embedded in the binary, started once per
// trial (in its own process group, under the runner's tool limits) to run a
// pack's Python tools: tau_sync classes (invoke(data, **kwargs) over the
// tables), mcp_async TlkMcpCore-style classes, and registry scripts (a .py
// with a TOOLS dict, such as food_delivery_2's mcp_server.py).
//
// The two speak JSON lines over stdio, one answer per request: Load imports
// the tools and answers their schemas, Set replaces the host's tables, Call
// runs one tool and answers its output and its record-level changes as DB
// service PATCH operations per table. The host tracks changes with dict/list
// subclasses whose mutators mark the owning top-level record dirty, so a call
// costs what it touches, not the size of the state; a tool that raises is
// rolled back in the host and answers no operations. Applying the operations
// to the DB service is the runner's job.
//
// What the host writes is bounded: an answer whose output is over
// Config.MaxOutput (default 1 MiB) is a *ToolError naming its size and the
// limit, and the host keeps serving; stderr lines of any length are read
// without stopping, each kept to its first 4 KiB for the log.
//
// Imports: runner/proc (the host's limits), the standard library and
// github.com/go-logr/logr. It knows nothing of trials, the DB service or gRPC.
package pyhost
