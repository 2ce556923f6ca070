// Package builtin holds the tools compiled into the runner, chosen by name for a
// ToolSchema whose source is null or whose toolset is "builtin": generic table
// tools over the trial's DB service (db_get, db_find, db_insert, db_update,
// db_delete), calculator (a parser over + - * / % ** ^ and parentheses, never an
// eval), think, transfer_to_human_agents, and read_file / write_file / list_dir
// confined to the trial's directory.
//
// Every tool decodes its own arguments strictly: an unknown or mistyped argument
// is a *tools.ArgumentError, so the runner answers INVALID_ARGUMENTS even when a
// task advertises a looser schema than the tool needs.
//
// Imports: api/canonical (filter equality as the DB service defines it),
// api/task, dbservice/client (the operation shape), runner/tools and the
// standard library.
package builtin
