// Package boundedtext bounds the texts limbo writes into objects, events and
// errors from what it does not control — lists of spec errors, an endpoint's
// answer — at a byte budget, cutting at a UTF-8 boundary and saying so ("…"),
// so that one long input cannot make a write the API server refuses.
package boundedtext

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Cut is s if it fits in n bytes, else its longest prefix that, with "…" after
// it, does.
func Cut(s string, n int) string { return Join([]string{s}, "", n) }

// CutMiddle is s if it fits in n bytes, else its longest prefix and suffix
// that, with "…" between them, do (the prefix gets the odd byte): for a text
// whose readers match both its start and its end.
func CutMiddle(s string, n int) string {
	if len(s) <= n {
		return s
	}
	room := max(n-len("…"), 0)
	return prefix(s, room-room/2) + "…" + suffix(s, room/2)
}

// Join joins items with sep, as strings.Join does, as long as the result fits in
// budget bytes. Otherwise it keeps the first items that fit and ends with sep +
// "… and N more", N the items left out, cutting nothing but a first item that
// alone is too long (Cut's way).
func Join(items []string, sep string, budget int) string {
	more := func(n int) string { return fmt.Sprintf("%s… and %d more", sep, n) }
	var b strings.Builder
	for i, item := range items {
		if i > 0 {
			item = sep + item
		}
		reserve := 0 // room for the tail, should the next item not fit
		if rest := len(items) - i - 1; rest > 0 {
			reserve = len(more(rest))
		}
		if b.Len()+len(item)+reserve <= budget {
			b.WriteString(item)
			continue
		}
		if i == 0 {
			b.WriteString(prefix(item, budget-reserve-len("…")))
			b.WriteString("…")
			if reserve > 0 {
				b.WriteString(more(len(items) - 1))
			}
			return b.String()
		}
		b.WriteString(more(len(items) - i))
		return b.String()
	}
	return b.String()
}

// prefix is the longest prefix of s of at most n bytes that does not split a
// UTF-8 sequence.
func prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// suffix is the longest suffix of s of at most n bytes that does not split a
// UTF-8 sequence.
func suffix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	start := len(s) - n
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	return s[start:]
}
