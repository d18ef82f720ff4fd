package image

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// layerImage is an image of one layer holding entries (a regular file's content is "x").
func layerImage(t *testing.T, entries ...tar.Header) v1.Image {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range entries {
		if h.Typeflag == tar.TypeReg {
			h.Size = 1
		}
		require.NoError(t, tw.WriteHeader(&h))
		if h.Typeflag == tar.TypeReg {
			_, err := tw.Write([]byte("x"))
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	require.NoError(t, err)
	img, err := mutate.AppendLayers(empty.Image, layer)
	require.NoError(t, err)
	return img
}

func TestUnpackRefusesEntriesThatLeaveTheDestination(t *testing.T) {
	outside := t.TempDir()
	escape := filepath.Join(outside, "escape")
	file := func(name string) tar.Header { return tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644} }
	for _, tc := range []struct {
		name    string
		entries []tar.Header
		want    string // who refuses: Unpack itself, or mutate.Extract (its error must not be lost)
	}{
		{"an absolute path", []tar.Header{file(escape)}, "image: unsafe path"},
		{"a path climbing out", []tar.Header{file("../escape")}, "unsafe tar path"},
		{"a climb inside a path", []tar.Header{{Name: "usr", Typeflag: tar.TypeDir, Mode: 0o755}, file("usr/../../escape")}, "unsafe tar path"},
		{"a link out, then a file through it", []tar.Header{{Name: "usr", Typeflag: tar.TypeSymlink, Linkname: outside, Mode: 0o777}, file("usr/escape")}, "unexpected entry type"},
		{"a hard link", []tar.Header{file("a"), {Name: "b", Typeflag: tar.TypeLink, Linkname: "a"}}, "unexpected entry type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "root")
			require.NoError(t, os.Mkdir(dest, 0o755))
			err := Unpack(layerImage(t, tc.entries...), dest)
			assert.ErrorContains(t, err, tc.want)
			assert.NoFileExists(t, escape)
			assert.NoFileExists(t, filepath.Join(filepath.Dir(dest), "escape"))
		})
	}
}

// A link already in the destination (a directory unpacked before, reused) cannot lead a write
// out of it: the writes go through an os.Root.
func TestUnpackDoesNotFollowALinkOutOfTheDestination(t *testing.T) {
	outside := t.TempDir()
	dest := t.TempDir()
	require.NoError(t, os.Symlink(outside, filepath.Join(dest, "usr")))
	err := Unpack(layerImage(t, tar.Header{Name: "usr/escape", Typeflag: tar.TypeReg, Mode: 0o644}), dest)
	assert.ErrorContains(t, err, "path escapes from parent")
	assert.NoFileExists(t, filepath.Join(outside, "escape"))
}

func TestUnpackWritesFilesAndDirectoriesWithTheirPermissions(t *testing.T) {
	dest := t.TempDir()
	require.NoError(t, Unpack(layerImage(t,
		tar.Header{Name: "usr/local/bin", Typeflag: tar.TypeDir, Mode: 0o750},
		tar.Header{Name: "usr/local/bin/tool", Typeflag: tar.TypeReg, Mode: 0o4755}, // setuid is dropped
	), dest))
	st, err := os.Stat(filepath.Join(dest, "usr/local/bin"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o750), st.Mode().Perm())
	st, err = os.Stat(filepath.Join(dest, "usr/local/bin/tool"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), st.Mode()&(os.ModePerm|os.ModeSetuid))
	got, err := os.ReadFile(filepath.Join(dest, "usr/local/bin/tool"))
	require.NoError(t, err)
	assert.Equal(t, "x", string(got))
}
