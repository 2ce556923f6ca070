// Package shop is the shop domain of the conformance task shop_orders_02
// (spec/shop-domain.md) as a Go MCP server: four tools over three tables (products,
// customers, orders), plus Tolokaforge's state convention (_tolokaforge_get_state_ /
// _tolokaforge_set_state_) through which the runner pushes the initial tables and
// reads the server's tables back after every call.
//
// It replaces a Python server, and the runner hashes the state it returns, so the
// number model is Python's: ints and floats stay distinct (300.0 is not 300), floats
// print as Python's repr and round like Python's round(x, 2). Reading and writing JSON
// is api/canonical's, the project's one Python-compatible encoder: records are ordered
// canonical Objects (ParseOptions.KeepOrder), tool outputs are canonical.Dump's
// json.dumps(result) and the state is json.dumps with separators=(",", ":"). The
// Python arithmetic on those numbers is the shop's own (number.go).
//
// Main serves MCP over stdin/stdout (wired as `tolokaforge mcp shop`, whose flags
// the binary's root parses into Options); NewServer returns the server for
// in-process use. TaskJSON is the TaskDescription of the task, built from the
// pack in shop_orders_02/.
//
// Imports: api/canonical, the standard library and
// github.com/modelcontextprotocol/go-sdk. Nothing from the runner or the operator.
package shop
