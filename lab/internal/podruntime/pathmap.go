package podruntime

import (
	"sort"
	"strings"
)

// PathMap translates container paths to host paths, the way mounts do inside a container: the
// lab has no mount namespaces per pod, so configs that name container paths are rewritten.
type PathMap []PathMapping

// PathMapping maps one container path (a directory or a file) to a host path.
type PathMapping struct {
	Container string
	Host      string
}

// Sorted returns the mappings longest container path first, so that nested mounts win.
func (m PathMap) Sorted() PathMap {
	out := append(PathMap(nil), m...)
	sort.SliceStable(out, func(i, j int) bool { return len(out[i].Container) > len(out[j].Container) })
	return out
}

// Resolve maps a single container path; ok is false when no mount covers it.
func (m PathMap) Resolve(p string) (string, bool) {
	for _, mp := range m.Sorted() {
		if p == mp.Container {
			return mp.Host, true
		}
		if strings.HasPrefix(p, strings.TrimSuffix(mp.Container, "/")+"/") {
			return mp.Host + p[len(strings.TrimSuffix(mp.Container, "/")):], true
		}
	}
	return p, false
}

// Rewrite replaces every container path in text that a mount covers. A match must start a path
// (preceded by a space, quote or line start) so that "/etc/coredns" inside another path is left
// alone.
func (m PathMap) Rewrite(text string) string {
	var b strings.Builder
	for i := 0; i < len(text); {
		if text[i] == '/' && (i == 0 || strings.ContainsRune(" \t\n\"'=", rune(text[i-1]))) {
			end := i
			for end < len(text) && !strings.ContainsRune(" \t\n\"'{};", rune(text[end])) {
				end++
			}
			mapped, _ := m.Resolve(text[i:end])
			b.WriteString(mapped)
			i = end
			continue
		}
		b.WriteByte(text[i])
		i++
	}
	return b.String()
}
