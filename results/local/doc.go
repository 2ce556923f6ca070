// Package local is the one in-process stack of the binary: a DB service and a
// runner (with the grading engine) served on loopback ports the kernel picks,
// with the runner client connected under a token generated in memory
// (StartStack), and the commands built on it. `tolokaforge trial run` drives
// one trial through it with the host's own attempt driver, so a trial on a
// laptop behaves as it does on a cluster; `pack validate` runs each pack's
// golden path with the oracle and grades that episode with every component
// the task configures (ValidatePack, ValidateTask); `regrade` replays recorded
// turns on a fresh DB state, calling no model, and grades them again into a
// new regrade-<timestamp> directory (Regrade). LoadTask reads a task file,
// LoadPack a task pack directory (as `pack import` converts it) and FindPacks
// the packs of a project directory, for `trial run --task`.
//
// It is the stated exception of the layout: the one package outside test/
// that embeds the runner and the DB service, because running them in process
// is its job (hack/verify-imports.sh). Only the binary's commands import it.
//
// Imports: api/artifacts, api/authn, api/result, api/runnerpb, api/task, api/task/pack,
// api/v1alpha1, controllers/host, controllers/host/agents, dbservice, runner,
// runner/client, runner/grading, runner/pyenv, the standard library, github.com/go-logr/logr,
// go.opentelemetry.io/otel/trace and sigs.k8s.io/yaml.
package local
