// Command build-image builds the plugin's multi-platform container image from linux binaries,
// without a container engine or a base image (pkg/release/image), into an OCI image layout, and
// pushes it when asked.
//
//	build-image --dist dist --out dist/image                      # goreleaser's binaries
//	build-image --binary linux/amd64=PATH --binary linux/arm64=PATH --out DIR
//	build-image --dist dist --out dist/image --push ghcr.io/lanaccess/kubectl-lanaccess
//
// The tag is version.ImageTag of the binaries' version: a release's version, or "dev".
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/release/image"
	"github.com/lanaccess/kubectl-lanaccess/pkg/version"
)

type binaryFlags map[string]string

func (b binaryFlags) String() string { return fmt.Sprint(map[string]string(b)) }

func (b binaryFlags) Set(s string) error {
	platform, path, ok := strings.Cut(s, "=")
	if !ok || platform == "" || path == "" {
		return fmt.Errorf("want PLATFORM=PATH, e.g. linux/amd64=bin/linux_amd64/kubectl-lanaccess, got %q", s)
	}
	b[platform] = path
	return nil
}

func main() {
	binaries := binaryFlags{}
	dist := flag.String("dist", "", "goreleaser's dist directory: the binaries of artifacts.json, the version of metadata.json")
	flag.Var(binaries, "binary", "PLATFORM=PATH of a binary (repeat for each of "+strings.Join(image.Platforms, ", ")+")")
	license := flag.String("license", "LICENSE", "the license file to put in the image")
	out := flag.String("out", "", "the OCI image layout to write (a new directory)")
	push := flag.String("push", "", "a repository to push the image to, e.g. "+version.ImageRepository)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *dist, binaries, *license, *out, *push); err != nil {
		fmt.Fprintln(os.Stderr, "build-image:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, dist string, binaries binaryFlags, license, out, push string) error {
	if out == "" {
		return errors.New("--out is required")
	}
	opts := image.Options{Binaries: binaries, License: license}
	if dist != "" {
		if len(binaries) > 0 {
			return errors.New("give --dist or --binary, not both")
		}
		var err error
		if opts.Binaries, opts.Version, err = fromDist(dist); err != nil {
			return err
		}
	}
	idx, info, err := image.Build(ctx, opts)
	if err != nil {
		return err
	}
	tag := version.ImageTag(info.Version)
	if err := image.WriteLayout(out, idx, tag); err != nil {
		return err
	}
	if err := describe(idx, out, tag, info); err != nil {
		return err
	}
	if push != "" {
		ref, err := image.Push(ctx, idx, push, tag)
		if err != nil {
			return err
		}
		d, err := idx.Digest()
		if err != nil {
			return err
		}
		fmt.Printf("pushed %s@%s\n", ref, d)
	}
	return nil
}

// fromDist reads goreleaser's dist: the linux binaries of the build (artifacts.json, type
// "Binary") and the release version (metadata.json; the binaries carry it with a "v").
func fromDist(dist string) (map[string]string, string, error) {
	var artifacts []struct {
		Path   string `json:"path"`
		Goos   string `json:"goos"`
		Goarch string `json:"goarch"`
		Type   string `json:"type"`
	}
	var meta struct {
		Version string `json:"version"`
	}
	for name, v := range map[string]any{"artifacts.json": &artifacts, "metadata.json": &meta} {
		b, err := os.ReadFile(filepath.Join(dist, name))
		if err != nil {
			return nil, "", err
		}
		if err := json.Unmarshal(b, v); err != nil {
			return nil, "", fmt.Errorf("%s: %w", name, err)
		}
	}
	binaries := map[string]string{}
	for _, a := range artifacts {
		p := a.Goos + "/" + a.Goarch
		if a.Type != "Binary" || a.Goos != "linux" {
			continue
		}
		if _, dup := binaries[p]; dup {
			return nil, "", fmt.Errorf("artifacts.json: two binaries for %s", p)
		}
		binaries[p] = a.Path
	}
	if meta.Version == "" {
		return nil, "", errors.New("metadata.json: no version")
	}
	return binaries, "v" + meta.Version, nil
}

// describe prints the tag, the index digest and each platform's compressed size.
func describe(idx v1.ImageIndex, out, tag string, info version.Info) error {
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s: %s:%s (version %s, commit %s), index %s\n", out, version.ImageRepository, tag, info.Version, info.Commit, d)
	m, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	for _, desc := range m.Manifests {
		img, err := idx.Image(desc.Digest)
		if err != nil {
			return err
		}
		layers, err := img.Layers()
		if err != nil {
			return err
		}
		var size int64
		for _, l := range layers {
			s, err := l.Size()
			if err != nil {
				return err
			}
			size += s
		}
		fmt.Printf("  %s/%s %s: %d layer bytes (compressed)\n", desc.Platform.OS, desc.Platform.Architecture, desc.Digest, size)
	}
	return nil
}
