//go:build unix

package main

// How wide text is on a terminal, for the tables: a name in Chinese or
// Japanese takes two columns a character, an accent combined with the
// letter before it none, so counting runes misaligns the columns after
// such a name.

import (
	"strings"
	"unicode"

	"golang.org/x/text/width"
)

// runeWidth is how many terminal columns r takes: 0 for a combining mark
// or a format character (a zero-width joiner, say), 2 for an East Asian
// wide or full-width character, else 1.
func runeWidth(r rune) int {
	switch {
	case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf):
		return 0
	}
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}

// displayWidth is how many terminal columns s takes.
func displayWidth(s string) int {
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}

// cutToWidth cuts s to at most w columns, ending it with "…" when it was
// cut; it reports whether it was.
func cutToWidth(s string, w int) (string, bool) {
	if displayWidth(s) <= w {
		return s, false
	}
	var b strings.Builder
	used := 0
	for _, r := range s {
		rw := runeWidth(r)
		if used+rw > w-1 {
			break
		}
		b.WriteRune(r)
		used += rw
	}
	return b.String() + "…", true
}

// padCell pads c with spaces to w columns, on the left when right (a
// right-aligned column), else on the right.
func padCell(c string, w int, right bool) string {
	pad := strings.Repeat(" ", max(w-displayWidth(c), 0))
	if right {
		return pad + c
	}
	return c + pad
}
