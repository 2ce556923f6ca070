// Package pack converts Tolokaforge native task directories (task.yaml,
// grading.yaml, initial_state.json, system_prompt.md, fixtures/tools.json)
// into Task manifests.
//
// Conversion is explicit about loss: every key of task.yaml or grading.yaml
// that has no place in the TaskDescription is reported with its path (a
// Diagnostic), never dropped silently; null and empty values carry nothing
// and are not reported. YAML is read through its node tree so number
// literals keep their int/float identity (300.00 stays a float) on their way
// to the canonical hash.
//
// A pack is someone else's input, read as hostile: files are read only below
// the task directory (a symbolic link that leaves it is refused, naming the
// link and its target; links inside are followed), each file is bounded
// (MaxFileBytes, regular files only), every YAML file is refused past an
// alias budget (MaxAliasNodes expanded nodes, MaxAliasDepth) and alias
// cycles are refused, and ConvertContext stops with the context's error when
// it is canceled.
// grading.yaml's trace_checks and CEL custom_checks (a checks list of name,
// expr, when, weight, description) are kept in TaskDescription.grading's own
// keys and pass that component's validation at import (selectors, kinds,
// bindings; every CEL expression compiled), so a bad one is refused naming its
// file and key before any trial. Python custom checks (a block without checks)
// are reported, not kept.
//
// Conversion is pure: it reads the pack directory and writes manifests. The
// CLI (`tolokaforge pack import|validate`) lives in the binary's cmd_pack.go;
// running a pack's golden path locally lives in results/local.
//
// Imports: api/rootfs, api/task, api/v1alpha1, the standard library and
// go.yaml.in/yaml/v3. The runner's builtin tool catalog comes in through
// Options.Builtins, so nothing outside api/ is linked.
package pack
