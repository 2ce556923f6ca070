//go:build !linux

package proc

import "context"

// SetSubreaper is a no-op where there is no PR_SET_CHILD_SUBREAPER.
func SetSubreaper() error { return nil }

// KillTagged finds nothing where there is no /proc.
func KillTagged(context.Context, string) ([]int, error) { return nil, nil }
