package corefile

import (
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Files is what a CoreDNS container sees of its filesystem, as far as the Kubernetes API can
// tell: the files of its ConfigMap volumes at their mount paths. Discovery builds it from the
// pod spec; it is never the filesystem of the machine running doctor. A path under a mounted
// ConfigMap volume is known to exist or not; a path elsewhere (the image, a Secret, an
// emptyDir) is unknown, and whatever depends on it is reported as such, never guessed.
type Files struct {
	files map[string]File
	// dirs are the directories whose complete listing is known: a ConfigMap volume's mount
	// path, its subdirectories, and the kubelet's ..data links.
	dirs map[string]map[string]bool
	// known are the roots of trees whose content is fully known (ConfigMap volume mounts, and
	// single files mounted with subPath).
	known []string
	// opaque are mount paths of volumes whose content the API does not show.
	opaque []string
	// Env are the container's environment variables with a literal value: CoreDNS replaces
	// {$NAME} with them. A placeholder of another variable stays as written (unknown).
	Env map[string]string
	// Build is the CoreDNS the container runs, read from its image (ReadBuild): the plugins'
	// behaviour that changed between versions is judged by it.
	Build Build
	// WorkDir is the container's working directory (the official image's WORKDIR is /): plugins
	// read relative file paths from it (the file plugin, without a `root`).
	WorkDir string
	// mounts are the known mounts in the order added.
	mounts []Mount
	// zoneRecords counts the zone-file records read so far through these files, against one
	// budget of maxZoneRecords for the whole read; zoneParsed tells, per (file, origin) parsed,
	// whether it was read to its end (a parse that hit the cap is never run again).
	zoneRecords int
	zoneParsed  map[string]bool
}

// Mount is one known mount: a volume's files at their relative paths, or one file (subPath).
type Mount struct {
	Path string
	// Volume is true for a volume mounted as a directory (laid out by the kubelet's atomic
	// writer), false for a single file mounted with subPath.
	Volume bool
	Files  map[string]File
}

// Mounts lists the known mounts, in the order they were added.
func (f *Files) Mounts() []Mount {
	if f == nil {
		return nil
	}
	return f.mounts
}

// File is one file of the pod and where it comes from.
type File struct {
	Content string
	// Object and Key name what it is projected from: "ConfigMap kube-system/coredns", "Corefile".
	Object, Key string
	// Source is the object discovery read it from (a *corev1.ConfigMap), for fixes.
	Source any
}

// From is "ConfigMap kube-system/coredns key Corefile".
func (f File) From() string { return f.Object + " key " + f.Key }

// NewFiles returns an empty view of a pod's filesystem: every path is unknown.
func NewFiles() *Files {
	return &Files{files: map[string]File{}, dirs: map[string]map[string]bool{}}
}

// AtomicWriterDir is the name this model gives the timestamped directory the kubelet writes a
// ConfigMap volume into (pkg/volume/util/atomic_writer.go: ..<timestamp>, with ..data a
// symlink to it and every key a symlink through ..data). Its real name depends on the time of
// the write; it starts with "..", as the real one does, which is what a glob can see of it.
const AtomicWriterDir = "..2006_01_02_15_04_05.000000000"

// MountVolume adds a ConfigMap (or projected) volume mounted as a directory at mountPath, with
// files (relative path -> file). The kubelet's atomic writer (kubernetes
// pkg/volume/util/atomic_writer.go) lays such a volume out as ..data -> ..<timestamp>/ and one
// symlink per top-level entry through ..data: a glob such as `*` matches ..data and the
// timestamped directory too, and CoreDNS's import then fails on them ("is a directory").
func (f *Files) MountVolume(mountPath string, files map[string]File) {
	root := cleanAbs(mountPath)
	f.mounts = append(f.mounts, Mount{Path: root, Volume: true, Files: files})
	f.known = append(f.known, root)
	f.addDir(root)
	for _, d := range []string{"..data", AtomicWriterDir} {
		f.addEntry(root, d)
		f.addDir(path.Join(root, d))
	}
	for rel, file := range files {
		rel = path.Clean(rel)
		if rel == "." || strings.HasPrefix(rel, "../") || path.IsAbs(rel) {
			continue // the API server refuses such item paths
		}
		for _, base := range []string{root, path.Join(root, "..data"), path.Join(root, AtomicWriterDir)} {
			f.addFile(path.Join(base, rel), file)
		}
	}
}

// MountFile adds a single file mounted with subPath at p.
func (f *Files) MountFile(p string, file File) {
	p = cleanAbs(p)
	f.mounts = append(f.mounts, Mount{Path: p, Files: map[string]File{"": file}})
	f.known = append(f.known, p)
	f.addFile(p, file)
}

// MountOpaque records a volume whose content is not known (a Secret, an emptyDir...): paths
// under it are unknown even when an enclosing ConfigMap volume is known.
func (f *Files) MountOpaque(mountPath string) {
	p := cleanAbs(mountPath)
	f.opaque = append(f.opaque, p)
	if parent := path.Dir(p); f.dirs[parent] != nil {
		f.addEntry(parent, path.Base(p))
	}
}

func (f *Files) addFile(p string, file File) {
	f.files[p] = file
	dir := path.Dir(p)
	for dir != "/" && f.dirs[dir] == nil && f.underKnown(dir) {
		f.addDir(dir)
		dir = path.Dir(dir)
	}
	f.linkParents(p)
}

// linkParents lists every path component of p in the known directory above it.
func (f *Files) linkParents(p string) {
	for p != "/" {
		parent := path.Dir(p)
		if f.dirs[parent] != nil {
			f.addEntry(parent, path.Base(p))
		}
		p = parent
	}
}

func (f *Files) addDir(p string) {
	if f.dirs[p] == nil {
		f.dirs[p] = map[string]bool{}
	}
	// a mount point inside a known volume is an entry of that volume's directory
	f.linkParents(p)
	// mounts added earlier below this directory are entries of it
	for _, m := range append(slices.Clone(f.known), f.opaque...) {
		if path.Dir(m) == p {
			f.addEntry(p, path.Base(m))
		}
	}
}

func (f *Files) addEntry(dir, name string) {
	if f.dirs[dir] == nil {
		f.dirs[dir] = map[string]bool{}
	}
	f.dirs[dir][name] = true
}

// underKnown reports whether p lies in a tree whose content is fully known.
func (f *Files) underKnown(p string) bool {
	best := ""
	for _, k := range f.known {
		if within(p, k) && len(k) > len(best) {
			best = k
		}
	}
	if best == "" {
		return false
	}
	for _, o := range f.opaque {
		if within(p, o) && len(o) > len(best) {
			return false
		}
	}
	return true
}

func within(p, root string) bool {
	return p == root || root == "/" || strings.HasPrefix(p, root+"/")
}

func cleanAbs(p string) string {
	if !path.IsAbs(p) {
		p = "/" + p
	}
	return path.Clean(p)
}

// entryKind is what a path is, as far as the model knows.
type entryKind int

const (
	kindUnknown entryKind = iota
	kindMissing
	kindFile
	kindDir
)

func (f *Files) stat(p string) entryKind {
	if f == nil {
		return kindUnknown
	}
	p = cleanAbs(p)
	for _, o := range f.opaque {
		if within(p, o) {
			return kindUnknown
		}
	}
	if _, ok := f.files[p]; ok {
		return kindFile
	}
	if f.dirs[p] != nil && f.underKnown(p) {
		return kindDir
	}
	if f.underKnown(p) {
		return kindMissing
	}
	return kindUnknown
}

// Read returns the file at p; ok is false when it does not exist or is not known.
func (f *Files) Read(p string) (File, bool) {
	if f == nil {
		return File{}, false
	}
	file, ok := f.files[cleanAbs(p)]
	return file, ok
}

// Known reports whether the model knows whether p exists.
func (f *Files) Known(p string) bool { return f.stat(p) != kindUnknown }

// errUnknownPath says that a glob or a read reached a path the API does not show.
type errUnknownPath struct{ path string }

func (e errUnknownPath) Error() string {
	return e.path + " is not in a ConfigMap volume of the pod: its content cannot be read from the API"
}

// glob matches pattern as Go's filepath.Glob does on the pod's filesystem (CoreDNS's import
// uses it, coredns/caddy caddyfile/parse.go doImport): a pattern without meta characters
// matches the path when it exists; otherwise each directory level is listed and its names,
// sorted, matched with filepath.Match (which matches names starting with a dot too). A
// listing the model does not know is an errUnknownPath.
func (f *Files) glob(pattern string) ([]string, error) {
	if !hasMeta(pattern) {
		switch f.stat(pattern) {
		case kindUnknown:
			return nil, errUnknownPath{pattern}
		case kindMissing:
			return nil, nil
		}
		return []string{pattern}, nil
	}
	dir, file := path.Split(pattern)
	dir = cleanGlobDir(dir)
	if _, err := filepath.Match(file, ""); err != nil {
		return nil, err
	}
	if !hasMeta(dir) {
		return f.globDir(dir, file, nil)
	}
	if dir == pattern {
		return nil, filepath.ErrBadPattern // filepath.Glob refuses a pattern that does not shrink
	}
	dirs, err := f.glob(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range dirs {
		if out, err = f.globDir(d, file, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (f *Files) globDir(dir, pattern string, out []string) ([]string, error) {
	switch f.stat(dir) {
	case kindUnknown:
		return nil, errUnknownPath{dir}
	case kindMissing, kindFile:
		return out, nil
	}
	names := make([]string, 0, len(f.dirs[cleanAbs(dir)]))
	for n := range f.dirs[cleanAbs(dir)] {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		ok, err := filepath.Match(pattern, n)
		if err != nil {
			return out, err
		}
		if ok {
			out = append(out, path.Join(dir, n))
		}
	}
	return out, nil
}

func cleanGlobDir(dir string) string {
	switch dir {
	case "":
		return "."
	case "/":
		return dir
	}
	return dir[:len(dir)-1]
}

func hasMeta(p string) bool { return strings.ContainsAny(p, `*?[\`) }
