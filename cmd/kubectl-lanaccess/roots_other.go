//go:build !linux

package main

// systemHasRoots: elsewhere the platform's verifier or root store decides; the fallback roots
// are installed as before.
func systemHasRoots() bool { return false }
