package mcpgw

// This file holds "did you mean": the closest known name by edit distance.

import "strings"

// suggest gives the known name s was most likely meant to be, or "". It
// compares without case, by edit distance (a swap of neighbours counts one),
// allowing one edit in short names and two in longer ones.
func suggest(s string, known []string) string {
	if h, ok := fieldHints[s]; ok {
		for _, k := range known {
			if k == h {
				return h
			}
		}
	}
	if s == "" || len(s) > 64 {
		return ""
	}
	limit := 1
	if len(s) >= 6 {
		limit = 2
	}
	best, bestD := "", limit+1
	ls := strings.ToLower(s)
	for _, k := range known {
		if k == s {
			continue
		}
		if d := editDistance(ls, strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
