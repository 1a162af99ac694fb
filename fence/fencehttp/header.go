package fencehttp

import (
	"net/url"
	"strconv"
	"strings"
)

// The headers of a fenced request and of its refusal.
const (
	// KeyHeader carries the key, percent-encoded: each byte outside
	// visible ASCII ('!' to '~'), space included, and each '%' as %XX,
	// so that any key survives as a header value; a key of visible ASCII
	// without '%' is sent as it is.
	KeyHeader = "Dsync-Fence-Key"

	// TokenHeader carries the token, in decimal.
	TokenHeader = "Dsync-Fence-Token"

	// MarkHeader, on a refusal (409), carries the key's mark in decimal:
	// the token accepted first. It is absent when the mark store did not
	// tell it.
	MarkHeader = "Dsync-Fence-Mark"
)

const hexDigits = "0123456789ABCDEF"

// escapeKey percent-encodes the bytes of key that a header value cannot
// carry as they are: controls, space (a server trims it at the ends),
// bytes above ASCII, and '%' itself.
func escapeKey(key string) string {
	n := 0
	for i := 0; i < len(key); i++ {
		if mustEscape(key[i]) {
			n++
		}
	}
	if n == 0 {
		return key
	}
	var b strings.Builder
	b.Grow(len(key) + 2*n)
	for i := 0; i < len(key); i++ {
		c := key[i]
		if mustEscape(c) {
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

func mustEscape(c byte) bool { return c <= ' ' || c >= 0x7f || c == '%' }

// unescapeKey decodes a KeyHeader value. It refuses a '%' that two hex
// digits do not follow, and nothing else: a client of another language
// that sends a key's UTF-8 as it is gets that key.
func unescapeKey(v string) (string, error) { return url.PathUnescape(v) }

// formatToken is a token as TokenHeader and MarkHeader carry it.
func formatToken(t uint64) string { return strconv.FormatUint(t, 10) }

// parseToken reads a token of TokenHeader or MarkHeader: decimal digits
// only, no sign.
func parseToken(v string) (uint64, error) { return strconv.ParseUint(v, 10, 64) }
