// Package mcpclient is the runner's adapter for tools of invocation style
// mcp_server: one MCP client session per trial per server source, over stdio to a
// child process (the usual case) or over streamable HTTP when the source names a URL.
//
// A stdio server runs in its own process group, in the trial's directory, with a
// minimal environment (never the runner's own, which holds provider keys); its
// stderr is drained line by line into the runner's logger. Close and Restart kill the
// whole group, so a server that forked helpers leaves nothing behind. With
// Config.Confine (the runner sets it for every trial) the server runs under a
// supervisor (proc.Supervise) and Landlock: Close and Restart end the
// supervisor's whole subtree, a helper that left the group or the session
// included, and the server sees only the folders it was given.
//
// A tool result over Config.MaxOutput (default 1 MiB) is not returned: Call
// answers a tool error naming its size and the limit, and the session serves on.
//
// Tolokaforge's state convention is exposed as GetState / SetState over the hidden
// tools _tolokaforge_get_state_ / _tolokaforge_set_state_; table contents pass
// through as json.RawMessage so number literals (300.0 vs 300) survive untouched.
//
// Imports: runner/proc (the server's limits and teardown), the standard
// library, github.com/go-logr/logr and github.com/modelcontextprotocol/go-sdk.
// It knows nothing of trials, the DB service or gRPC.
package mcpclient
