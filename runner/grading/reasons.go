package grading

import "strings"

// reasonSeparator joins Grade.reasons segments.
const reasonSeparator = " | "

// joinReasons joins the non-empty segments once, so a grade whose components said
// nothing opens with its first real sentence, never with a separator.
func joinReasons(groups ...[]string) string {
	var parts []string
	for _, g := range groups {
		for _, s := range g {
			if s = strings.TrimSpace(s); s != "" {
				parts = append(parts, s)
			}
		}
	}
	return strings.Join(parts, reasonSeparator)
}
