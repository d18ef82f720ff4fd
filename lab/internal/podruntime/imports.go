package podruntime

import (
	"path/filepath"
	"sort"
	"strings"
)

// TopLevelImports returns the arguments of the `import` directives written between server
// blocks (k3s's `import /etc/coredns/custom/*.server`): those files hold whole server blocks.
// An import inside a block or a snippet brings plugin lines and is not returned.
func TopLevelImports(text string) []string {
	var out []string
	var line strings.Builder
	depth := 0
	flush := func() {
		f := strings.Fields(line.String())
		if len(f) >= 2 && f[0] == "import" {
			out = append(out, strings.Trim(f[1], `"`))
		}
		line.Reset()
	}
	for i := 0; i < len(text); i++ {
		if end, ok := verbatimEnd(text, i); ok {
			if depth == 0 && text[i] != '#' {
				line.WriteString(text[i:end])
			}
			i = end - 1
			continue
		}
		switch c := text[i]; {
		case c == '{':
			depth++
		case c == '}':
			if depth > 0 {
				depth--
			}
		case c == '\n':
			flush()
		case depth == 0:
			line.WriteByte(c)
		}
	}
	flush()
	return out
}

// importedBlocks maps every volume file that a top-level import of the Corefile at host (its
// text already rewritten to host paths) reads to its text with "bind ip" in each block, as
// BindCorefile does for the Corefile itself: the blocks an import brings must listen where the
// pod would, or the Corefile's bound blocks and the imported wildcard ones would be two servers
// on the same port. The pattern is a filepath.Glob, as CoreDNS's (coredns/caddy caddyfile
// parser, doImport), relative to the importing file's directory.
func importedBlocks(host, text string, files map[string][]byte, paths PathMap, ip string) map[string][]byte {
	out := map[string][]byte{}
	for _, pattern := range TopLevelImports(text) {
		if !filepath.IsAbs(pattern) {
			pattern = filepath.Join(filepath.Dir(host), pattern)
		}
		names := make([]string, 0, len(files))
		for name := range files {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if ok, err := filepath.Match(pattern, name); err != nil || !ok || name == host {
				continue
			}
			out[name] = []byte(BindCorefile(paths.Rewrite(string(files[name])), ip))
		}
	}
	return out
}
