// Package pack converts Tolokaforge native task directories (task.yaml,
// grading.yaml, initial_state.json, system_prompt.md, fixtures/tools.json)
// into Task manifests, and validates packs by running each task's golden
// path with the oracle agent on a local runner.
//
// Conversion is explicit about loss: every key of task.yaml or grading.yaml
// that has no place in the TaskDescription is reported with its path (a
// Diagnostic), never dropped silently; null and empty values carry nothing
// and are not reported. YAML is read through its node tree so number
// literals keep their int/float identity (300.00 stays a float) on their way
// to the canonical hash.
//
// Main serves `tolokaforge pack import DIR...` (a YAML stream of Tasks and
// ConfigMaps on stdout, for `kubectl apply -f -`; diagnostics on stderr) and
// `tolokaforge pack validate DIR...`.
//
// Imports: api/task, api/v1alpha1, go.yaml.in/yaml/v3, apimachinery's
// validation, runner/tools/builtin (the builtin tool catalog); for validate,
// the host (controllers/host, controllers/host/agents), the runner
// (runner, runner/client, runner/grading) and the DB service, which run
// in-process on loopback. Nothing imports this package but the binary's
// main (and tests).
package pack
