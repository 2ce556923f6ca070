// Package pack converts Tolokaforge task directories (task.yaml,
// grading.yaml, initial_state.json, system_prompt.md, fixtures/tools.json),
// whole projects of them (tasks/<id>/ reaching the project's files through
// ..) and Terminal-Bench task folders into Task manifests. KEYS.md lists
// every upstream key and what the import does with it.
//
// Conversion is explicit about loss: every key of task.yaml or grading.yaml
// that has no place in the TaskDescription is reported with its path (a
// Diagnostic), never dropped silently; null and empty values carry nothing
// and are not reported. YAML is read through its node tree so number
// literals keep their int/float identity (300.00 stays a float) on their way
// to the canonical hash.
//
// A pack is someone else's input, read as hostile: files are read only below
// its root, the task directory or, for a project task, the project root (the
// folder that holds tasks/): a path or a symbolic link that leaves it is
// refused, naming it (links inside are followed), each file is bounded
// (MaxFileBytes, regular files only), every YAML file is refused past an
// alias budget (MaxAliasNodes expanded nodes, MaxAliasDepth) and alias
// cycles are refused, and ConvertContext stops with the context's error when
// it is canceled.
// grading.yaml's trace_checks and CEL custom_checks (a checks list of name,
// expr, when, weight, description) are kept in TaskDescription.grading's own
// keys and pass that component's validation at import (selectors, kinds,
// bindings; every CEL expression compiled), so a bad one is refused naming its
// file and key before any trial. A Python custom-check suite (file,
// relative_imports, timeout_seconds, interface_version) is kept in the same
// block and its files travel in tool_artifacts, as do a Python MCP server
// script's .py tree and an explicit tool source's package; tables written as
// dicts of records keep each record's key in the synthetic column
// task.DictKeyField, their primary key (TableSchema.PrimaryKey) and key field
// on the Python tool sources (extra.dict_tables). What the runner cannot honour (a
// browser, env_assertions, an agentic judge) is refused by name.
//
// Conversion is pure: it reads the pack directory and writes manifests. The
// CLI (`tolokaforge pack import|build|validate`) lives in cmd/tolokaforge/cli/pack.go;
// running a pack's golden path locally lives in results/local.
//
// The manifests keep a task's tool_artifacts out of its Task: they travel
// as one content-addressed bundle (api/packfiles) in a ConfigMap of their
// own, named by spec.files' digest, which the manager verifies before the
// runner gets them.
//
// Imports: api/packfiles, api/rootfs, api/task, api/v1alpha1, the standard library,
// github.com/BurntSushi/toml and
// go.yaml.in/yaml/v3. The runner's builtin tool catalog comes in through
// Options.Builtins, so nothing outside api/ is linked.
package pack
