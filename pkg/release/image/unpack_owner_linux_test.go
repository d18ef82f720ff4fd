package image

import (
	"archive/tar"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Run as root, Unpack gives each entry the owner of its header, as containerd applies a layer
// (the image's home directory is its user's: 0700, 65532:65532).
func TestUnpackGivesEntriesTheirOwnersAsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root may give files away (containerd does not either: NoSameOwner)")
	}
	dest := t.TempDir()
	require.NoError(t, Unpack(layerImage(t,
		tar.Header{Name: "home/", Typeflag: tar.TypeDir, Mode: 0o755},
		tar.Header{Name: "home/nonroot/", Typeflag: tar.TypeDir, Mode: 0o700, Uid: 65532, Gid: 65532},
		tar.Header{Name: "home/nonroot/f", Typeflag: tar.TypeReg, Mode: 0o600, Uid: 65532, Gid: 65533},
	), dest))
	for name, want := range map[string][2]uint32{"home": {0, 0}, "home/nonroot": {65532, 65532}, "home/nonroot/f": {65532, 65533}} {
		st, err := os.Lstat(filepath.Join(dest, name))
		require.NoError(t, err)
		sys, ok := st.Sys().(*syscall.Stat_t)
		require.True(t, ok)
		assert.Equal(t, want, [2]uint32{sys.Uid, sys.Gid}, name)
	}
}
