package imageref

import (
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var valid = []string{
	"ghcr.io/lanaccess/kubectl-lanaccess:dev",
	"registry.lan:5000/mirror/kubectl-lanaccess:v0.2.0",
	"localhost/kubectl-lanaccess:v1",
	"[::1]:5000/team/app:1.0",
	"docker.io/library/busybox:1.36.1@sha256:73aaf090f3d85aa34ee199857f03fa3a95c8ede2ffd4cc2cdb5b94e566b11662",
	"ghcr.io/x/y@sha256:73aaf090f3d85aa34ee199857f03fa3a95c8ede2ffd4cc2cdb5b94e566b11662",
	"quay.io/a.b/c__d/e-f:Tag_1.x",
}

var invalid = []string{
	"", "evil image", "ghcr.io/x/y:v1\nhostPID: true", "ghcr.io/x/y:v1 # comment",
	"busybox:1", "library/busybox:1", "ghcr.io/x/y", "ghcr.io/X/y:v1", "ghcr.io/x/y:", "ghcr.io/x/y:-v1",
	"ghcr.io/x/y@sha256:abc", "ghcr.io//y:v1", "ghcr.io/x/y/:v1", "-bad.io/x:v1", `ghcr.io/x/"y":v1`,
	"ghcr.io/x/y:" + strings.Repeat("a", 129), "docker.io/busybox:1",
}

func TestParseAcceptsFullReferencesAndRoundTrips(t *testing.T) {
	for _, s := range valid {
		r, err := Parse(s)
		require.NoError(t, err, s)
		assert.Equal(t, s, r.String())
	}
	r, err := Parse("registry.lan:5000/mirror/kubectl-lanaccess:v0.2.0")
	require.NoError(t, err)
	assert.Equal(t, Ref{Registry: "registry.lan:5000", Repository: "mirror/kubectl-lanaccess", Tag: "v0.2.0"}, r)
}

func TestParseRefusesWhatIsNotAFullReference(t *testing.T) {
	for _, s := range invalid {
		_, err := Parse(s)
		assert.Error(t, err, "%q", s)
	}
}

// The parser is never looser than go-containerregistry's strict parser, which the plugin used
// before (the oracle, kept as a test dependency only).
func TestParseIsNoLooserThanGoContainerregistry(t *testing.T) {
	for _, s := range append(append([]string{}, valid...), invalid...) {
		if _, err := Parse(s); err == nil {
			_, gerr := name.ParseReference(s, name.StrictValidation)
			assert.NoError(t, gerr, "%q accepted here, refused by go-containerregistry", s)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range append(append([]string{}, valid...), invalid...) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Parse(s)
		if err != nil {
			return
		}
		// Safe unquoted in YAML, and stable.
		assert.False(t, strings.ContainsAny(s, " \n\r\t#\"'{},&*!|>%`"), "%q", s)
		again, err := Parse(r.String())
		require.NoError(t, err)
		assert.Equal(t, r, again)
		_, gerr := name.ParseReference(s, name.StrictValidation)
		assert.NoError(t, gerr, "%q accepted here, refused by go-containerregistry", s)
	})
}
