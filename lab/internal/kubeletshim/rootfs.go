package kubeletshim

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// A container sees its volumes at their mount paths. The lab's pods use the machine's programs,
// so a container's root is the machine's, with the pod's hostPath volumes bound at their mount
// paths on top. A mount path need not exist on the machine (/host/etc/cni/net.d), so the root
// is built on a tmpfs: every entry of the machine's root is bound there, except the directories
// on the way to a mount path, which are made and filled the same way one level down. The
// mounts live in the mount namespace `ip netns exec` made for the command (a slave of the
// machine's: nothing propagates back) and go away with it.

// ContainerExecCommand is the lab subcommand that runs a command in such a root.
const ContainerExecCommand = "container-exec"

// Bind is a volume: a directory of the machine bound at a container path.
type Bind struct {
	Source string
	Target string
}

func bindFlags(binds []Bind) []string {
	out := make([]string, 0, 2*len(binds))
	for _, b := range binds {
		out = append(out, "--bind", b.Source+":"+b.Target)
	}
	return out
}

// ParseBind reads a --bind value, SOURCE:TARGET, both absolute.
func ParseBind(s string) (Bind, error) {
	src, dst, ok := strings.Cut(s, ":")
	if !ok || !filepath.IsAbs(src) || !filepath.IsAbs(dst) || filepath.Clean(dst) == "/" {
		return Bind{}, fmt.Errorf("bind %q: want /SOURCE:/TARGET", s)
	}
	return Bind{Source: filepath.Clean(src), Target: filepath.Clean(dst)}, nil
}

// ContainerExec builds the container's root on root, enters it and execs argv there. It only
// returns on error.
func ContainerExec(root string, binds []Bind, argv []string) error {
	if len(argv) == 0 {
		return errors.New("no command")
	}
	root = filepath.Clean(root)
	if err := syscall.Mount("tmpfs", root, "tmpfs", 0, "mode=0755"); err != nil {
		return fmt.Errorf("tmpfs on %s: %w", root, err)
	}
	m := mirror{root: root, made: map[string]bool{}, skip: map[string]bool{root: true}}
	for _, b := range binds {
		m.skip[b.Target] = true
		m.markParents(b.Target)
	}
	// The scratch root is itself under the machine's root: keep it out of its own copy.
	m.markParents(root)
	if err := m.fill("/"); err != nil {
		return err
	}
	for _, b := range binds {
		dst := filepath.Join(root, b.Target)
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return err
		}
		if err := syscall.Mount(b.Source, dst, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s at %s: %w", b.Source, b.Target, err)
		}
	}
	if err := syscall.Chroot(root); err != nil {
		return err
	}
	if err := os.Chdir("/"); err != nil {
		return err
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return err
	}
	return syscall.Exec(path, argv, os.Environ())
}

// mirror copies the machine's root onto the tmpfs, made directories for those on the way to a
// mount path and bind mounts for the rest.
type mirror struct {
	root string
	// made are the machine's directories that are made on the tmpfs rather than bound.
	made map[string]bool
	// skip are the paths left out: the mount paths (bound afterwards) and the scratch root.
	skip map[string]bool
}

func (m mirror) markParents(p string) {
	for d := filepath.Dir(p); d != "/"; d = filepath.Dir(d) {
		m.made[d] = true
	}
}

// fill reproduces the machine's directory dir under the root.
func (m mirror) fill(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		host := filepath.Join(dir, e.Name())
		dst := filepath.Join(m.root, host)
		switch {
		case m.skip[host]:
		case m.made[host]:
			if err := os.Mkdir(dst, 0o755); err != nil {
				return err
			}
			if err := m.fill(host); err != nil {
				return err
			}
		default:
			if err := bindEntry(host, dst, e.Type()); err != nil {
				return err
			}
		}
	}
	return nil
}

// bindEntry makes dst what host is: the same symlink, or a bind mount of the directory or file.
func bindEntry(host, dst string, typ fs.FileMode) error {
	switch {
	case typ&fs.ModeSymlink != 0:
		target, err := os.Readlink(host)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	case typ.IsDir():
		if err := os.Mkdir(dst, 0o755); err != nil {
			return err
		}
	default:
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	if err := syscall.Mount(host, dst, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", host, err)
	}
	return nil
}
