package corednsrun

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Mount is one mount of the pod: a volume's files at their relative paths (Volume), or one file
// mounted with subPath (Files[""]).
type Mount struct {
	Path   string
	Volume bool
	Files  map[string]string
}

// AtomicWriterDir is the name given here to the timestamped directory the kubelet writes a
// volume into (its real name depends on the time; it starts with "..2", as here).
const AtomicWriterDir = "..2006_01_02_15_04_05.000000000"

// Layout writes the pod's files under root as the kubelet lays out its volumes: a volume's
// files in a timestamped directory, ..data a symlink to it, and one symlink per top-level
// entry through ..data (kubernetes pkg/volume/util/atomic_writer.go); a subPath mount is one
// plain file. It also writes /etc/resolv.conf, which the kubelet always writes. Mounts are
// laid out in the order discovery added them, inner mounts after outer ones.
func Layout(mounts []Mount, root string) error {
	mounts = append([]Mount(nil), mounts...)
	sort.SliceStable(mounts, func(i, j int) bool { return len(mounts[i].Path) < len(mounts[j].Path) })
	for _, m := range mounts {
		dir := filepath.Join(root, filepath.FromSlash(m.Path))
		if !m.Volume {
			if err := writeFile(dir, m.Files[""]); err != nil {
				return err
			}
			continue
		}
		stamp := filepath.Join(dir, AtomicWriterDir)
		if err := os.MkdirAll(stamp, 0o755); err != nil {
			return err
		}
		top := map[string]bool{}
		for rel, f := range m.Files {
			rel = path.Clean(rel)
			if err := writeFile(filepath.Join(stamp, filepath.FromSlash(rel)), f); err != nil {
				return err
			}
			top[strings.SplitN(rel, "/", 2)[0]] = true
		}
		if err := os.Symlink(AtomicWriterDir, filepath.Join(dir, "..data")); err != nil {
			return err
		}
		for name := range top {
			if err := os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name)); err != nil {
				return err
			}
		}
	}
	return writeFile(filepath.Join(root, "etc", "resolv.conf"), "nameserver 127.0.0.1\n")
}

func writeFile(p, content string) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	if _, err := os.Lstat(p); err == nil {
		return fmt.Errorf("%s is laid out twice", p)
	}
	return os.WriteFile(p, []byte(content), 0o600)
}
