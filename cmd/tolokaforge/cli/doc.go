// Package cli is the tolokaforge binary's command line: the cobra command
// tree (one file per command group), its flags, its exit statuses and its
// generated reference (WriteReference, docs/cli). It is the main program's
// room: package main (cmd/tolokaforge) only hands it the process, and no
// package outside cmd/ imports it.
//
// Imports: api/artifacts, api/artifacts/blobstore, api/llm, api/packfiles,
// api/result, api/runnerpb, api/task, api/task/pack, api/telemetry, api/v1alpha1,
// cmd/tolokaforge/cli/imagebuild, controllers, controllers/gateway, controllers/host, controllers/host/agents,
// controllers/manager, dbservice, examples/shop, results/cluster,
// results/local, results/pull, results/report, runner, runner/proc,
// runner/tools/builtin, the standard library, github.com/go-logr/logr,
// github.com/spf13/cobra, github.com/spf13/pflag, go.opentelemetry.io/otel, go.opentelemetry.io/otel/sdk,
// go.opentelemetry.io/otel/trace, k8s.io/apimachinery,
// k8s.io/client-go, sigs.k8s.io/controller-runtime and
// sigs.k8s.io/yaml. The -tags dev build adds test/devcluster (dev.go,
// pack_judge.go).
package cli
