// Package dbservice is the per-trial database of a Tolokaforge trial: an in-memory,
// HTTP-served store of JSON tables with named snapshots, reset to the initial state,
// stable-state filtering and the Python-compatible canonical hash (package canonical).
//
// One process serves many independent trials. Requests on one trial are serialized by
// the trial's mutex; different trials never share a lock beyond the trial map.
//
// State is persistent (immutable) data: a trial's state is a map of tables, a table is
// a list of chunks of up to 256 records, and a record is an immutable canonical.Object
// with its canonical bytes cached (full, and with the table's unstable fields removed).
// A PATCH builds a new state by copying only the chunks it touches, inside a transaction
// that is discarded on any error, so a request applies completely or not at all.
// Snapshots, restore and reset swap state pointers, costing O(1) whatever the record
// count. A hash never re-serializes: it feeds each chunk's cached, comma-joined bytes to
// sha256, and resumes from the sha256 state saved before the first chunk that differs
// from an earlier version, so it costs at most one pass (digest.go). A table whose
// primary key is the importer's synthetic key column (__tolokaforge_key__) was authored
// as a dict: the hash covers its records ordered by that key, so two states hash equal
// when their dicts are equal whatever the records' list order, and such a table is
// re-sorted and hashed whole when it changes (dicttable.go); its stored order, which
// every state response keeps, is untouched. Equality filters
// on the table's key field (its primary key, else "id") use per-chunk hash indexes; a
// PATCH whose lookups have cost as much as the table's size indexes the whole table
// once, so N operations cost O(rows + N), never O(rows * N).
//
// Every cost is bounded by Limits (limits.go; one dbservice flag each): body bytes,
// body read time, digits of a number literal, operations per PATCH, query response
// bytes, tables, records, bytes and snapshots per trial, trials per process and the
// bytes charged to all trials. A refusal names the limit and its value in the message
// and in details.limit / details.limit_value, and changes nothing.
//
// Names are checked wherever they enter (init tables, schemas and unstable fields,
// the PATCH path, ?tables=, snapshot paths): 1 to MaxNameBytes (128) bytes of printable
// UTF-8, no '/' or '\', not "." or ".."; a refusal is a 400 ValidationError naming the
// place, the name (quoted, cut to 64 bytes) and details.rule. A request refused before
// its body is read (no credential, a bad id or name, an unknown endpoint, a body too
// large or too slow) is answered at once with Connection: close and its connection
// ended, instead of net/http first reading up to 256 KiB of a body nobody wants.
//
// Stable filtering removes each declared unstable field from the top level of every
// record of the table whose name equals the declared table name exactly. Unlike the
// Python service there is no plural/singular or suffix matching of table names, and a
// dotted table name is not split.
//
// Filter matching (update, delete, and upsert's key lookup) is field equality by
// canonical.Equal: numbers compare across int and float (1 == 1.0), booleans equal only
// booleans, a missing field matches a null filter value (Python's rec.get(k) == v) and
// {} matches every record.
//
// Imports: api/authn, api/canonical, api/logging, the standard library,
// github.com/go-logr/logr, github.com/prometheus/client_golang and
// github.com/theory/jsonpath (RFC 9535 queries). It never imports its client.
package dbservice
