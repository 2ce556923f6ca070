//go:build race

package proc_test

// raceEnabled: this test binary, which re-executes itself as the limits
// wrapper, carries ThreadSanitizer, whose shadow memory no tight
// RLIMIT_AS admits.
const raceEnabled = true
