package grading

import "fmt"

// maxEditDistance bounds the Myers search. States are diffed after trimming their
// common prefix and suffix, so a real grading diff is small; past this bound the
// middle is reported as removed-then-added, which is still a correct (if coarse) diff
// and keeps a pathological pair from costing quadratic memory.
const maxEditDistance = 1000

type editOp uint8

const (
	opEqual editOp = iota
	opDelete
	opInsert
)

type edit struct {
	op   editOp
	a, b int // line index in a (equal/delete) and b (equal/insert)
}

// unifiedDiff returns the lines of a unified diff (as diff -u writes them, without
// trailing newlines) turning a into b, with ctx lines of context; nil when equal.
func unifiedDiff(a, b []string, nameA, nameB string, ctx int) []string {
	edits := lineEdits(a, b)
	changed := false
	for _, e := range edits {
		if e.op != opEqual {
			changed = true
			break
		}
	}
	if !changed {
		return nil
	}
	out := []string{"--- " + nameA, "+++ " + nameB}
	for i := 0; i < len(edits); {
		// Find the next change, then grow the hunk while changes are within 2*ctx.
		for i < len(edits) && edits[i].op == opEqual {
			i++
		}
		if i == len(edits) {
			break
		}
		start := max(i-ctx, 0)
		end := i
		for end < len(edits) {
			if edits[end].op != opEqual {
				end++
				continue
			}
			run := end
			for run < len(edits) && edits[run].op == opEqual {
				run++
			}
			if run == len(edits) || run-end > 2*ctx {
				end = min(end+ctx, len(edits))
				break
			}
			end = run
		}
		out = append(out, hunk(edits[start:end], a, b)...)
		i = end
	}
	return out
}

func hunk(es []edit, a, b []string) []string {
	aStart, bStart, aLen, bLen := -1, -1, 0, 0
	for _, e := range es {
		if e.op != opInsert {
			if aStart < 0 {
				aStart = e.a
			}
			aLen++
		}
		if e.op != opDelete {
			if bStart < 0 {
				bStart = e.b
			}
			bLen++
		}
	}
	// diff -u numbers an empty range by the line before it.
	if aStart < 0 {
		aStart = es[0].a - 1
	}
	if bStart < 0 {
		bStart = es[0].b - 1
	}
	lines := []string{fmt.Sprintf("@@ -%s +%s @@", hunkRange(aStart, aLen), hunkRange(bStart, bLen))}
	for _, e := range es {
		switch e.op {
		case opEqual:
			lines = append(lines, " "+a[e.a])
		case opDelete:
			lines = append(lines, "-"+a[e.a])
		case opInsert:
			lines = append(lines, "+"+b[e.b])
		}
	}
	return lines
}

func hunkRange(start, n int) string {
	if n == 1 {
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

// lineEdits returns a shortest edit script from a to b (Myers' O(ND) algorithm over the
// part between the common prefix and suffix). Each edit carries the a and b positions
// it sits at, so inserts and deletes can be numbered in hunk headers.
func lineEdits(a, b []string) []edit {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var out []edit
	for i := 0; i < pre; i++ {
		out = append(out, edit{opEqual, i, i})
	}
	out = append(out, myers(a[pre:len(a)-suf], b[pre:len(b)-suf], pre, pre)...)
	for i := 0; i < suf; i++ {
		out = append(out, edit{opEqual, len(a) - suf + i, len(b) - suf + i})
	}
	return out
}

func myers(a, b []string, offA, offB int) []edit {
	n, m := len(a), len(b)
	coarse := func() []edit {
		out := make([]edit, 0, n+m)
		for i := range n {
			out = append(out, edit{opDelete, offA + i, offB})
		}
		for j := range m {
			out = append(out, edit{opInsert, offA + n, offB + j})
		}
		return out
	}
	if n == 0 || m == 0 {
		return coarse()
	}
	maxD := min(n+m, maxEditDistance)
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	var trace [][]int
	found := -1
	for d := 0; d <= maxD && found < 0; d++ {
		snap := make([]int, len(v))
		copy(snap, v)
		trace = append(trace, snap)
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				found = d
				break
			}
		}
	}
	if found < 0 {
		return coarse()
	}
	// Backtrack through the saved frontiers.
	var rev []edit
	x, y := n, m
	for d := found; d > 0; d-- {
		vPrev := trace[d]
		k := x - y
		var prevK int
		if k == -d || (k != d && vPrev[off+k-1] < vPrev[off+k+1]) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := vPrev[off+prevK]
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			x--
			y--
			rev = append(rev, edit{opEqual, offA + x, offB + y})
		}
		if x == prevX {
			y--
			rev = append(rev, edit{opInsert, offA + x, offB + y})
		} else {
			x--
			rev = append(rev, edit{opDelete, offA + x, offB + y})
		}
	}
	for x > 0 && y > 0 {
		x--
		y--
		rev = append(rev, edit{opEqual, offA + x, offB + y})
	}
	out := make([]edit, len(rev))
	for i, e := range rev {
		out[len(rev)-1-i] = e
	}
	return out
}
