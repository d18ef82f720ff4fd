package workstation

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Packages is one cache entry of `lab/build.sh workstation`: Debian's packages extracted into
// Dir/root, and the version of each (Dir/versions.txt, "package=version" lines).
type Packages struct {
	Dir      string
	Versions map[string]string
}

// Root is where the packages are extracted (usr/, lib/, etc/ below it).
func (p Packages) Root() string { return filepath.Join(p.Dir, "root") }

// Path is a file of the extracted packages, e.g. Path("usr/sbin/NetworkManager").
func (p Packages) Path(rel string) string { return filepath.Join(p.Root(), rel) }

// Describe names the versions that decide the workstation's behaviour, for test logs and the
// headers of recorded outputs.
func (p Packages) Describe() string {
	return fmt.Sprintf("Debian 12 systemd-resolved %s, NetworkManager %s, dbus-daemon %s",
		p.Versions["systemd-resolved"], p.Versions["network-manager"], p.Versions["dbus-daemon"])
}

// libraryPath is LD_LIBRARY_PATH for the extracted programs: libnm, libsystemd-shared-252.so
// (in systemd/) and the others live only in the extracted root.
func (p Packages) libraryPath() string {
	lib := p.Path("usr/lib/x86_64-linux-gnu")
	return lib + ":" + filepath.Join(lib, "systemd")
}

// requiredPackages are the packages a workstation cannot start without.
var requiredPackages = []string{"systemd-resolved", "libsystemd-shared", "network-manager", "libnm0", "dbus-daemon", "dnsmasq-base"}

// LoadPackages reads a complete cache entry.
func LoadPackages(dir string) (Packages, error) {
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err != nil {
		return Packages{}, fmt.Errorf("%s is not a complete workstation cache entry (run lab/build.sh workstation): %w", dir, err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "versions.txt"))
	if err != nil {
		return Packages{}, err
	}
	p := Packages{Dir: dir, Versions: map[string]string{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if name, version, ok := strings.Cut(strings.TrimSpace(sc.Text()), "="); ok {
			p.Versions[name] = version
		}
	}
	var missing []string
	for _, name := range requiredPackages {
		if p.Versions[name] == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return Packages{}, fmt.Errorf("%s/versions.txt lacks %s", dir, strings.Join(missing, ", "))
	}
	return p, nil
}

// BuildPackages runs `lab/build.sh workstation` (apt-get download and dpkg-deb -x the first
// time, a lookup of apt's versions afterwards) and loads the entry it reports.
func BuildPackages(ctx context.Context, labDir string, progress io.Writer) (Packages, error) {
	script := filepath.Join(labDir, "build.sh")
	cmd := exec.CommandContext(ctx, "bash", script, "workstation")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, progress
	if err := cmd.Run(); err != nil {
		return Packages{}, fmt.Errorf("%s workstation: %w", script, err)
	}
	for line := range strings.SplitSeq(out.String(), "\n") {
		if dir, ok := strings.CutPrefix(strings.TrimSpace(line), "workstation="); ok {
			return LoadPackages(dir)
		}
	}
	return Packages{}, errors.New(script + " workstation did not report its directory")
}
