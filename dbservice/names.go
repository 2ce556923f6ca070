package dbservice

import (
	"fmt"
	"net/http"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// maxNameBytes bounds a table or snapshot name. Names are keys of the hashed state, and
// every error, log line and response that concerns a table or snapshot repeats its name;
// pack tables and the runner's snapshots are short identifiers ("orders", "pre_golden"),
// and 128 is the usual identifier bound of SQL databases (SQL Server's sysname), so a
// legitimate name never comes near it while a hostile one cannot make every message
// about it 100 kB long.
const maxNameBytes = 128

// nameQuoteBytes is how much of an offending name an error message repeats.
const nameQuoteBytes = 64

// Name rules, as details.rule spells them.
const (
	ruleEmpty     = "empty"
	ruleTooLong   = "too_long"
	ruleUTF8      = "invalid_utf8"
	ruleDotName   = "dot_name"
	ruleSeparator = "path_separator"
	ruleControl   = "non_printable"
)

// nameProblem says why name is not a valid table or snapshot name, or returns ok. A name
// is 1 to MaxNameBytes bytes of valid UTF-8, every rune printable (unicode.IsPrint: no
// control, format or line-separator characters; the ASCII space is allowed), holding no
// '/' or '\' and not "." or "..". The last two rules keep names from ever acting as path
// steps (in URLs, and in any file a snapshot or a report may one day be written to).
func nameProblem(name string) (rule, why string, ok bool) {
	switch {
	case name == "":
		return ruleEmpty, "must not be empty", false
	case len(name) > maxNameBytes:
		return ruleTooLong, fmt.Sprintf("is %d bytes long, more than the limit of %d", len(name), maxNameBytes), false
	case name == "." || name == "..":
		return ruleDotName, `must not be "." or ".."`, false
	}
	for i, r := range name {
		switch {
		case r == utf8.RuneError && !validRuneAt(name, i):
			return ruleUTF8, fmt.Sprintf("is not valid UTF-8 (byte %d)", i), false
		case r == '/' || r == '\\':
			return ruleSeparator, fmt.Sprintf("must not contain a path separator ('/' or '\\'), found %q at byte %d", r, i), false
		case !unicode.IsPrint(r):
			return ruleControl, fmt.Sprintf("must not contain control or non-printing characters, found %U at byte %d", r, i), false
		}
	}
	return "", "", true
}

// validRuneAt tells a literal U+FFFD from a decoding error at byte i.
func validRuneAt(s string, i int) bool {
	_, size := utf8.DecodeRuneInString(s[i:])
	return size > 1
}

// quoteName quotes name for a message, cut to nameQuoteBytes on a rune boundary with
// "..." after the quote when cut, so a hostile name cannot make its refusal huge.
func quoteName(name string) string {
	if len(name) <= nameQuoteBytes {
		return strconv.Quote(name)
	}
	cut := nameQuoteBytes
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return strconv.Quote(name[:cut]) + "..."
}

// checkName refuses an invalid table or snapshot name (kind "table" or "snapshot") with
// a 400 ValidationError naming where the name came from (path: a JSON path of the body
// or the URL's parameter), the name (quoted, cut) and the rule it breaks.
func checkName(kind, path, name string) *Error {
	rule, why, ok := nameProblem(name)
	if ok {
		return nil
	}
	return newError(http.StatusBadRequest, errTypeValidation,
		map[string]any{"path": path, "kind": kind, "name": quoteName(name), "name_bytes": len(name), "rule": rule},
		"%s: %s name %s %s", path, kind, quoteName(name), why)
}
