// Package version carries the build's identity, set by the linker:
//
//	-X github.com/lanaccess/kubectl-lanaccess/pkg/version.version=v0.1.0 (and commit, date)
//
// A `go install` build without ldflags falls back to the module version and VCS stamp.
package version

import "runtime/debug"

var (
	version = "dev"
	commit  = ""
	date    = ""
)

// Info is the identity of this build.
type Info struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	Date    string `json:"date"`
}

// Get returns the build identity.
func Get() Info {
	info := Info{Version: version, Commit: commit, Date: date}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if info.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && info.Commit == "":
				info.Commit = s.Value
			case s.Key == "vcs.time" && info.Date == "":
				info.Date = s.Value
			}
		}
	}
	if info.Commit == "" {
		info.Commit = "unknown"
	}
	if info.Date == "" {
		info.Date = "unknown"
	}
	return info
}
