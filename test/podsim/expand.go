package podsim

import (
	"strings"
	"unicode/utf8"
)

// expand applies Kubernetes' $(VAR) reference syntax exactly as kubelet does
// for env values, command and args (k8s.io/kubernetes third_party/forked/
// golang/expansion): $$ escapes a $, unknown or malformed references are left
// verbatim. It is reimplemented here because importing k8s.io/kubernetes for
// sixty lines would pull the whole tree into go.mod.
func expand(input string, vars map[string]string) string {
	if !strings.Contains(input, "$") {
		return input
	}
	var buf strings.Builder
	checkpoint := 0
	for cursor := 0; cursor < len(input); cursor++ {
		if input[cursor] != '$' || cursor+1 >= len(input) {
			continue
		}
		buf.WriteString(input[checkpoint:cursor])
		read, isVar, advance := readVariableName(input[cursor+1:])
		if isVar {
			if v, ok := vars[read]; ok {
				buf.WriteString(v)
			} else {
				buf.WriteString("$(" + read + ")")
			}
		} else {
			buf.WriteString(read)
		}
		cursor += advance
		checkpoint = cursor + 1
	}
	return buf.String() + input[checkpoint:]
}

// readVariableName reads what follows a '$': the text to emit (or the name to
// look up when isVar) and how many bytes were consumed.
func readVariableName(input string) (read string, isVar bool, advance int) {
	r, size := utf8.DecodeRuneInString(input)
	switch r {
	case '$':
		return input[:size], false, size
	case '(':
		if i := strings.IndexByte(input[1:], ')'); i >= 0 {
			return input[1 : i+1], true, i + 2
		}
		return "$(", false, 1
	default:
		return "$" + input[:size], false, size
	}
}
