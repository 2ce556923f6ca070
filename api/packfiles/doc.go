// Package packfiles is the content-addressed bundle of a task pack's files
// (the tool sources, check suites and helpers a TaskDescription's
// tool_artifacts carry): one deterministic tar, named by the sha256 of its
// bytes, that `pack import` writes beside a Task and the manager verifies
// before a trial's runner receives the files.
//
// A tar rather than a JSON map of base64: files keep their bytes (no third
// of base64 overhead in the store, and a ConfigMap's binaryData encodes
// once), the bundle opens with any tar tool for review, and determinism is
// easy to state: entries sorted by path, regular files only, mode 0644,
// mtime 0, owner 0:0 with no names. The same files always give the same
// digest, so re-importing an unchanged pack changes nothing on the cluster.
//
// The reader trusts nothing: the bundle's size and digest are checked
// before it is parsed, and every entry must be a regular file whose path is
// relative, clean, inside the bundle and named once; anything else is
// refused naming the entry.
//
// Imports: the standard library.
package packfiles
