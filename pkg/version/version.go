// Package version carries the build's identity. A release build (goreleaser, `make build`) sets it
// through the linker:
//
//	-X github.com/lanaccess/kubectl-lanaccess/pkg/version.version=v0.1.0 (and commit, date)
//
// A build without those ldflags (`go install ...@v0.1.0`, `go build` in a clone) takes them from
// the build information the go command records: the module version (a release tag, or a
// pseudo-version that names the commit) and the VCS stamp (vcs.revision, vcs.time) when it built
// from a git checkout.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// Set by the linker (-X); empty when the build had no ldflags.
var (
	version = ""
	commit  = ""
	date    = ""
)

// Dev is the version of a build that knows none: no ldflags and no module version (`go build`
// with -buildvcs=false, or in a directory the go command does not see as a git checkout).
const Dev = "dev"

const unknown = "unknown"

// Info is the identity of this build.
type Info struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	Date    string `json:"date"`
}

// Get returns the build identity: the ldflags values where set, else the build information's.
func Get() Info { return get() }

// get reads the build information once: debug.ReadBuildInfo parses the module list embedded
// in the binary at every call (tens of microseconds with this module's dependencies), and the
// HTTPS probe sends the User-Agent on each of its requests (three per address). Nothing it
// reads changes while the process runs.
var get = sync.OnceValue(func() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(version, commit, date, bi)
})

// resolve merges the linker's values (lv, lc, ld; empty = not set) with the build information
// (nil when the binary carries none).
func resolve(lv, lc, ld string, bi *debug.BuildInfo) Info {
	info := Info{Version: lv, Commit: lc, Date: ld}
	if bi != nil {
		main := bi.Main.Version
		if main == "(devel)" {
			main = ""
		}
		if info.Version == "" {
			info.Version = main
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && info.Commit == "":
				info.Commit = s.Value
			case s.Key == "vcs.time" && info.Date == "":
				info.Date = s.Value
			}
		}
		// `go install module@<commit>` (or @latest before the first tag) builds from the module
		// proxy, without VCS stamp: the pseudo-version names the commit and its time.
		if module.IsPseudoVersion(main) {
			if rev, err := module.PseudoVersionRev(main); err == nil && info.Commit == "" {
				info.Commit = rev
			}
			if t, err := module.PseudoVersionTime(main); err == nil && info.Date == "" {
				info.Date = t.UTC().Format("2006-01-02T15:04:05Z")
			}
		}
	}
	if info.Version == "" {
		info.Version = Dev
	}
	if info.Commit == "" {
		info.Commit = unknown
	}
	if info.Date == "" {
		info.Date = unknown
	}
	return info
}

// UserAgent is the User-Agent of the plugin's API requests, in client-go's shape
// (rest.DefaultKubernetesUserAgent: "kubectl/v1.37.2 (linux/amd64) kubernetes/1a2b3c4"), so that
// the API server's audit log tells versions and builds apart.
func UserAgent() string { return agent() }

var agent = sync.OnceValue(func() string { return userAgent(Get(), runtime.GOOS, runtime.GOARCH) })

func userAgent(info Info, goos, goarch string) string {
	rev := info.Commit
	if len(rev) > 7 {
		rev = rev[:7]
	}
	return fmt.Sprintf("kubectl-lanaccess/%s (%s/%s) kubectl-lanaccess/%s", info.Version, goos, goarch, rev)
}

// ImageRepository is where releases push the plugin's container image.
const ImageRepository = "ghcr.io/lanaccess/kubectl-lanaccess"

// DevTag is the image tag of a build that is not a release.
const DevTag = "dev"

// ImageTag is the tag of the container image that carries the binary of version v.
//
// A release (v1.2.3, v1.2.3-rc.1) and a goreleaser snapshot (v0.1.1-snapshot+6391ac6) are
// tagged with their version, '+' written '_' (a tag allows [A-Za-z0-9_.-] only; Helm's OCI
// charts use the same substitution). Any other build is a development build: "dev", a Go
// pseudo-version (a commit, not a release) or a `git describe` that is not semver. Its manifests
// name the tag "dev", which a release never pushes: applied by mistake, they fail at the image
// pull instead of running some other version; `make image` tags a local image "dev" for a
// cluster that loads images from a file (kind, k3d).
func ImageTag(v string) string {
	if !semver.IsValid(v) || module.IsPseudoVersion(v) || len(v) > 128 {
		return DevTag
	}
	return strings.ReplaceAll(v, "+", "_")
}

// Image is the image reference that matches this binary.
func Image() string {
	return ImageRepository + ":" + ImageTag(Get().Version)
}
