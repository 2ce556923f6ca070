package host

import "strconv"

// callIDs makes tool-call ids episode-unique (GRADING.md G3): the provider's
// id where it is new in the trial, `<id>#<n>` for the n-th further use of one
// it reused (providers reset their counters per response, so "call_0" comes
// back every turn). The runner keys its record by these ids and GradeTrial
// joins calls to results by them, so two calls may never share one.
type callIDs struct {
	used    map[string]struct{}
	repeats map[string]int
	minted  int
}

func newCallIDs() *callIDs {
	return &callIDs{used: map[string]struct{}{}, repeats: map[string]int{}}
}

func (c *callIDs) assign(provider string) string {
	base := provider
	if base == "" {
		// A provider that sends no id still needs a key; minted ids go
		// through the same uniqueness rule so they cannot collide either.
		c.minted++
		base = "call_" + strconv.Itoa(c.minted)
	}
	if _, dup := c.used[base]; !dup {
		c.used[base] = struct{}{}
		return base
	}
	for {
		c.repeats[base]++
		id := base + "#" + strconv.Itoa(c.repeats[base])
		if _, dup := c.used[id]; !dup {
			c.used[id] = struct{}{}
			return id
		}
	}
}
