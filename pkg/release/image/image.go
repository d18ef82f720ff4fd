// Package image builds the plugin's container image without a container engine or a base image:
// go-containerregistry appends one layer (the static binary and the license) to an empty image,
// for each platform, and joins the images in a multi-platform OCI index, written to an OCI
// image layout and, for a release, pushed to a registry.
//
// The image runs as 65532:65532 (the "nonroot" user of distroless images; the examples' pods set
// runAsNonRoot and the same ids), its entrypoint is the plugin, and the only other file is the
// license. It needs nothing else: the binary is static (CGO_ENABLED=0, checked here), reaches the
// API server with the service account's token and CA, and verifies public certificates with the
// roots it embeds (golang.org/x/crypto/x509roots/fallback, used when the system has none).
package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/lanaccess/kubectl-lanaccess/pkg/version"
)

// Paths and identity inside the image.
const (
	BinaryPath  = "/usr/local/bin/kubectl-lanaccess"
	LicensePath = "/usr/share/doc/kubectl-lanaccess/LICENSE"
	User        = "65532:65532"
	// Home is the user's home directory, owned by User.
	Home = "/home/nonroot"
	// Source is the repository the image's labels name.
	Source = "https://github.com/lanaccess/kubectl-lanaccess"
)

// Platforms are the platforms the image is built for, in the index's order.
var Platforms = []string{"linux/amd64", "linux/arm64"}

// elfMachine is the ELF machine of each platform's binary.
var elfMachine = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// Options describe one build.
type Options struct {
	// Binaries maps each of Platforms ("linux/amd64") to the path of its binary.
	Binaries map[string]string
	// License is the path of the LICENSE file.
	License string
	// Version, when set, is the version the binaries must report (goreleaser's, for instance).
	Version string
}

// Build checks the binaries (ELF of the platform's machine, statically linked) and returns the
// multi-platform index and the identity of the build, which the binary this machine can run
// reports (`version -o json`): its version names the tag (version.ImageTag), its commit and
// date become the labels and the creation time (the commit's date in a release build, so that
// a rebuild gives the same digests).
func Build(ctx context.Context, o Options) (v1.ImageIndex, version.Info, error) {
	var info version.Info
	license, err := os.ReadFile(o.License)
	if err != nil {
		return nil, info, err
	}
	var extra []string
	for p := range o.Binaries {
		if !slices.Contains(Platforms, p) {
			extra = append(extra, p)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return nil, info, fmt.Errorf("image: no platform %s (the image is built for %s)", strings.Join(extra, ", "), strings.Join(Platforms, ", "))
	}
	native := runtime.GOOS + "/" + runtime.GOARCH
	path, ok := o.Binaries[native]
	if !ok {
		return nil, info, fmt.Errorf("image: no binary for %s, the platform that can tell the binaries' version here", native)
	}
	if info, err = binaryVersion(ctx, path); err != nil {
		return nil, info, err
	}
	if o.Version != "" && info.Version != o.Version {
		return nil, info, fmt.Errorf("image: %s is version %s, not %s", path, info.Version, o.Version)
	}
	created, err := time.Parse(time.RFC3339, info.Date)
	if err != nil {
		return nil, info, fmt.Errorf("image: %s has no build date (%q): build it with the release's ldflags or in a git checkout", path, info.Date)
	}
	for _, p := range Platforms {
		path, ok := o.Binaries[p]
		if !ok {
			return nil, info, fmt.Errorf("image: no binary for %s", p)
		}
		_, goarch, _ := strings.Cut(p, "/")
		if err := checkStaticELF(path, elfMachine[goarch]); err != nil {
			return nil, info, fmt.Errorf("image: %s binary %s: %w", p, path, err)
		}
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range Platforms {
		path := o.Binaries[p]
		goos, goarch, _ := strings.Cut(p, "/")
		bin, err := os.ReadFile(path)
		if err != nil {
			return nil, info, err
		}
		img, err := platformImage(info, created, goos, goarch, bin, license)
		if err != nil {
			return nil, info, fmt.Errorf("image: %s: %w", p, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: goos, Architecture: goarch}},
		})
	}
	// The index carries the image's description too, for registries that read the index's
	// annotations rather than a platform's config (OCI image-spec annotations.md).
	annotated, ok := mutate.Annotations(idx, map[string]string{
		"org.opencontainers.image.title":    "kubectl-lanaccess",
		"org.opencontainers.image.source":   Source,
		"org.opencontainers.image.version":  info.Version,
		"org.opencontainers.image.revision": info.Commit,
		"org.opencontainers.image.licenses": "Apache-2.0",
		"org.opencontainers.image.created":  created.UTC().Format(time.RFC3339),
	}).(v1.ImageIndex)
	if !ok {
		return nil, info, errors.New("image: annotating the index")
	}
	return annotated, info, nil
}

// checkStaticELF refuses a binary of another machine, or one that needs a dynamic loader (the
// image has no libc).
func checkStaticELF(path string, machine elf.Machine) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	if f.Machine != machine {
		return fmt.Errorf("ELF machine %v, want %v", f.Machine, machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			return errors.New("dynamically linked (build it with CGO_ENABLED=0)")
		}
	}
	return nil
}

// binaryVersion runs `BIN version -o json`.
func binaryVersion(ctx context.Context, path string) (version.Info, error) {
	var info version.Info
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "version", "-o", "json").Output()
	if err != nil {
		return info, fmt.Errorf("image: %s version: %w", path, err)
	}
	if err := json.Unmarshal(out, &info); err != nil {
		return info, fmt.Errorf("image: %s version: %w", path, err)
	}
	return info, nil
}

func platformImage(info version.Info, createdAt time.Time, goos, goarch string, bin, license []byte) (v1.Image, error) {
	layerTar, err := filesystem(createdAt, bin, license)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.DefaultCompression),
		// Compressed once, then kept: the digest, the layout and a push all read it.
		tarball.WithCompressedCaching)
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	created := v1.Time{Time: createdAt.UTC()}
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: created, CreatedBy: "kubectl-lanaccess cmd/build-image: " + BinaryPath + ", " + LicensePath},
	})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Created = goos, goarch, created
	cfg.Config.User = User
	cfg.Config.Entrypoint = []string{BinaryPath}
	// HOME: client-go's default kubeconfig (~/.kube/config) and the cache directory resolve
	// to it, not to relative paths. With readOnlyRootFilesystem, mount an emptyDir on /tmp (and
	// on HOME to keep a cache); the image's own /tmp is world-writable (1777) otherwise.
	cfg.Config.Env = []string{"PATH=/usr/local/bin", "HOME=" + Home}
	cfg.Config.WorkingDir = "/"
	cfg.Config.Labels = map[string]string{
		"org.opencontainers.image.title":       "kubectl-lanaccess",
		"org.opencontainers.image.description": "Diagnose LAN access to Services and OpenVPN pods",
		"org.opencontainers.image.source":      Source,
		"org.opencontainers.image.version":     info.Version,
		"org.opencontainers.image.revision":    info.Commit,
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.created":     created.Format(time.RFC3339),
	}
	return mutate.ConfigFile(img, cfg)
}

// filesystem is the layer: the directories, the binary (0755) and the license (0644), owned by
// root and dated Created, in a fixed order: the same input gives the same bytes.
func filesystem(created time.Time, bin, license []byte) ([]byte, error) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, dir := range []struct {
		name     string
		mode     int64
		uid, gid int
	}{
		{"home/", 0o755, 0, 0}, {strings.TrimPrefix(Home, "/") + "/", 0o700, 65532, 65532}, {"tmp/", 0o1777, 0, 0},
		{"usr/", 0o755, 0, 0}, {"usr/local/", 0o755, 0, 0}, {"usr/local/bin/", 0o755, 0, 0},
		{"usr/share/", 0o755, 0, 0}, {"usr/share/doc/", 0o755, 0, 0}, {"usr/share/doc/kubectl-lanaccess/", 0o755, 0, 0},
	} {
		h := &tar.Header{Typeflag: tar.TypeDir, Name: dir.name, Mode: dir.mode, Uid: dir.uid, Gid: dir.gid, ModTime: created, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
	}
	for _, f := range []struct {
		path string
		mode int64
		data []byte
	}{{BinaryPath, 0o755, bin}, {LicensePath, 0o644, license}} {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(f.path, "/"), Mode: f.mode, Size: int64(len(f.data)), ModTime: created, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// RefNameAnnotation names an image in an OCI layout's index.json (the OCI image layout
// specification's org.opencontainers.image.ref.name): the tag.
const RefNameAnnotation = "org.opencontainers.image.ref.name"

// WriteLayout writes idx into a new OCI image layout at dir, named by tag.
func WriteLayout(dir string, idx v1.ImageIndex, tag string) error {
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("image: %s exists; remove it first", dir)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendIndex(idx, layout.WithAnnotations(map[string]string{RefNameAnnotation: tag}))
}

// Push writes idx to repository:tag with the credentials of the docker configuration
// (~/.docker/config.json, credential helpers), as crane and ko do.
func Push(ctx context.Context, idx v1.ImageIndex, repository, tag string) (name.Reference, error) {
	ref, err := name.NewTag(repository+":"+tag, name.StrictValidation)
	if err != nil {
		return nil, err
	}
	return ref, remote.WriteIndex(ref, idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain))
}

// ReadIndex opens the OCI layout at dir as WriteLayout wrote it (one tagged index) and returns
// the index and its tag.
func ReadIndex(dir string) (v1.ImageIndex, string, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, "", err
	}
	top, err := p.ImageIndex()
	if err != nil {
		return nil, "", err
	}
	tm, err := top.IndexManifest()
	if err != nil {
		return nil, "", err
	}
	if len(tm.Manifests) != 1 {
		return nil, "", fmt.Errorf("image: %s holds %d entries, want the one index WriteLayout writes", dir, len(tm.Manifests))
	}
	idx, err := top.ImageIndex(tm.Manifests[0].Digest)
	return idx, tm.Manifests[0].Annotations[RefNameAnnotation], err
}

// Read opens the image of platform ("linux/amd64") in the OCI layout at dir.
func Read(dir, platform string) (v1.Image, error) {
	idx, _, err := ReadIndex(dir)
	if err != nil {
		return nil, err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, desc := range m.Manifests {
		if desc.Platform != nil && desc.Platform.OS+"/"+desc.Platform.Architecture == platform {
			return idx.Image(desc.Digest)
		}
	}
	return nil, fmt.Errorf("image: no %s image in %s", platform, dir)
}

// Unpack writes the filesystem of img under dest (an existing directory), as a container
// runtime would: directories and regular files with their permission bits; anything else
// (links, devices) and any path that is not local to dest (absolute, or climbing out with "..")
// is refused; run as root, each entry gets its owner. Every write goes through an os.Root on
// dest, which cannot leave it.
func Unpack(img v1.Image, dest string) error {
	root, err := os.OpenRoot(dest)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }()
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			// mutate.Extract writes the tar's end before it fails the stream (its tar.Writer's
			// Close is deferred, then the pipe is closed with the error): what follows the end
			// is that error, if any, which an Unpack that stopped here would hide.
			_, err := io.Copy(io.Discard, rc)
			return err
		}
		if err != nil {
			return err
		}
		if err := unpackEntry(root, h, tr); err != nil {
			return err
		}
	}
}

// unpackEntry writes one entry of a filesystem tar, its content read from r, under root.
func unpackEntry(root *os.Root, h *tar.Header, r io.Reader) error {
	name := filepath.FromSlash(h.Name)
	if !filepath.IsLocal(name) {
		return fmt.Errorf("image: unsafe path %q", h.Name)
	}
	perm := h.FileInfo().Mode().Perm()
	switch h.Typeflag {
	case tar.TypeDir:
		if err := root.MkdirAll(name, perm); err != nil {
			return err
		}
	case tar.TypeReg:
		if err := root.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return err
		}
		f, err := root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, io.LimitReader(r, h.Size))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	default:
		return fmt.Errorf("image: %s: unexpected entry type %c", h.Name, h.Typeflag)
	}
	// The entry's owner, as containerd applies a layer when it may (pkg/archive/tar.go,
	// createTarFile: Lchown unless NoSameOwner, i.e. unless unprivileged): the image's home
	// directory is its user's and no one else's.
	if os.Geteuid() != 0 {
		return nil
	}
	return root.Lchown(name, h.Uid, h.Gid)
}
