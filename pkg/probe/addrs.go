package probe

import (
	"net/netip"
	"slices"
	"strings"
	"time"
)

// SortAddrs sorts addresses and drops duplicates, in place, so that two answers compare as sets.
func SortAddrs(addrs []netip.Addr) []netip.Addr {
	slices.SortFunc(addrs, func(a, b netip.Addr) int { return a.Compare(b) })
	return slices.Compact(addrs)
}

// SameAddrs reports whether two address lists hold the same set.
func SameAddrs(a, b []netip.Addr) bool {
	return slices.Equal(SortAddrs(slices.Clone(a)), SortAddrs(slices.Clone(b)))
}

// DiffAddrs returns the addresses of want missing from got, and those of got not in want.
func DiffAddrs(want, got []netip.Addr) (missing, extra []netip.Addr) {
	for _, w := range SortAddrs(slices.Clone(want)) {
		if !slices.Contains(got, w) {
			missing = append(missing, w)
		}
	}
	for _, g := range SortAddrs(slices.Clone(got)) {
		if !slices.Contains(want, g) {
			extra = append(extra, g)
		}
	}
	return missing, extra
}

// AddrStrings renders addresses for evidence (JSON arrays of strings, never null).
func AddrStrings(addrs []netip.Addr) []string {
	out := make([]string, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, a.String())
	}
	return out
}

// JoinAddrs renders a set for a message: "10.0.10.11, 10.0.10.12", or "none".
func JoinAddrs(addrs []netip.Addr) string {
	if len(addrs) == 0 {
		return "none"
	}
	return strings.Join(AddrStrings(addrs), ", ")
}

// Median of durations (the mean of the two middle values for an even count); zero when empty.
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	mid := len(s) / 2
	if len(s)%2 == 1 {
		return s[mid]
	}
	return (s[mid-1] + s[mid]) / 2
}

// JoinAddrsSep joins addresses with sep ("" for none).
func JoinAddrsSep(addrs []netip.Addr, sep string) string {
	return strings.Join(AddrStrings(addrs), sep)
}
