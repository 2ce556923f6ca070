// Package tools defines the runner's tool abstraction: one callable tool of one
// trial (Tool), the per-actor registry that holds a trial's tools in declaration
// order (Registry, Entry), argument validation against a tool's JSON Schema
// (Validator) and the bounded, panic-safe invocation both ExecuteTool and golden
// replay go through (Invoke).
//
// Adapters live in subpackages (builtin) or in the runner (MCP) and implement
// Tool.
//
// Imports: api/task, dbservice/client, the standard library and
// github.com/google/jsonschema-go.
package tools
