//go:build !linux

package proc

const supported = false
