// Package pyenv is how the local stack and `pack import` find and use a Python
// for a pack's Python tools and checks.
//
// Choose picks the interpreter: an explicit one (--python), else
// $TOLOKAFORGE_PYTHON, else the first of python3 on PATH and Debian's
// /usr/bin/python3 that imports what `make python-deps` provisions (pydantic,
// email_validator), so a pyenv shim or a virtualenv on PATH does not shadow the
// interpreter the Makefile provisioned. Check refuses, before a run, a pack whose
// .py files import a module the interpreter cannot import, naming the module,
// `make python-deps` and --python. RewriteHint turns an ImportError's "pip
// install" advice into that message: this project provisions Python through
// Debian, never through a package index.
//
// Describer runs a registry script's tools through the runner's standard-library
// tool host (runner/tools/pyhost) once, under a time bound, and answers what each
// tool says about itself (get_info()), or asks a stdio MCP server script for its
// tools/list (runner/tools/mcpclient), for pack import (api/task/pack.Describer).
// The pack author's code runs there as a trial's tools do: under a supervisor
// (nothing it starts outlives the describe), proc.DefaultLimits, and Landlock
// (read-only the scratch copy of the files and the Python runtime, read-write
// only the scratch folder).
//
// Imports: api/task/pack, runner/proc, runner/tools/mcpclient,
// runner/tools/pyhost, the standard library and github.com/go-logr/logr.
package pyenv
