package version

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

func buildInfo(mainVersion string, settings ...string) *debug.BuildInfo {
	bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/lanaccess/kubectl-lanaccess", Version: mainVersion}}
	for i := 0; i+1 < len(settings); i += 2 {
		bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
	}
	return bi
}

func TestResolve(t *testing.T) {
	const rev = "fcdd8199a1c2b3d4e5f60718293a4b5c6d7e8f90"
	for name, tc := range map[string]struct {
		lv, lc, ld string
		bi         *debug.BuildInfo
		want       Info
	}{
		"ldflags win over the build information": {
			lv: "v0.2.0", lc: "abc", ld: "2026-11-30T00:00:00Z",
			bi:   buildInfo("v0.1.0", "vcs.revision", rev, "vcs.time", "2026-01-01T00:00:00Z"),
			want: Info{Version: "v0.2.0", Commit: "abc", Date: "2026-11-30T00:00:00Z"},
		},
		"go install module@v0.3.1: the module version, no VCS stamp": {
			bi:   buildInfo("v0.3.1"),
			want: Info{Version: "v0.3.1", Commit: "unknown", Date: "unknown"},
		},
		"go install module@commit: the pseudo-version names the commit and its time": {
			bi:   buildInfo("v0.0.0-20261130052233-fcdd8199a1c2"),
			want: Info{Version: "v0.0.0-20261130052233-fcdd8199a1c2", Commit: "fcdd8199a1c2", Date: "2026-11-30T05:22:33Z"},
		},
		"go build in a dirty clone: pseudo-version and the full VCS stamp": {
			bi:   buildInfo("v0.0.0-20261130052233-fcdd8199a1c2+dirty", "vcs.revision", rev, "vcs.time", "2026-11-30T05:22:33Z", "vcs.modified", "true"),
			want: Info{Version: "v0.0.0-20261130052233-fcdd8199a1c2+dirty", Commit: rev, Date: "2026-11-30T05:22:33Z"},
		},
		"go build with -buildvcs=false": {
			bi:   buildInfo("(devel)"),
			want: Info{Version: "dev", Commit: "unknown", Date: "unknown"},
		},
		"no build information at all": {
			want: Info{Version: "dev", Commit: "unknown", Date: "unknown"},
		},
		"ldflags version only, the VCS stamp fills commit and date": {
			lv:   "v0.2.0",
			bi:   buildInfo("(devel)", "vcs.revision", rev, "vcs.time", "2026-11-30T05:22:33Z"),
			want: Info{Version: "v0.2.0", Commit: rev, Date: "2026-11-30T05:22:33Z"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, resolve(tc.lv, tc.lc, tc.ld, tc.bi))
		})
	}
}

func TestUserAgentHasClientGosShape(t *testing.T) {
	assert.Equal(t, "kubectl-lanaccess/v0.2.0 (linux/arm64) kubectl-lanaccess/fcdd819",
		userAgent(Info{Version: "v0.2.0", Commit: "fcdd8199a1c2b3d4"}, "linux", "arm64"))
	assert.Equal(t, "kubectl-lanaccess/dev (darwin/amd64) kubectl-lanaccess/unknown",
		userAgent(Info{Version: "dev", Commit: "unknown"}, "darwin", "amd64"))
}

func TestImageTag(t *testing.T) {
	for v, want := range map[string]string{
		"v0.2.0":                       "v0.2.0",
		"v1.0.0-rc.1":                  "v1.0.0-rc.1",
		"v0.1.1-snapshot+6391ac6":      "v0.1.1-snapshot_6391ac6",
		"dev":                          DevTag,
		"":                             DevTag,
		"fcdd819-dirty":                DevTag, // git describe of an untagged commit
		"0.2.0":                        DevTag, // not a v-prefixed version: nothing tags images so
		"v0.0.0-20261130052233-fcdd81": DevTag,
		"v0.0.0-20261130052233-fcdd8199a1c2+dirty": DevTag,
		"v0.2.1-0.20261130052233-fcdd8199a1c2":     DevTag, // a commit after v0.2.0
	} {
		assert.Equal(t, want, ImageTag(v), v)
	}
}
