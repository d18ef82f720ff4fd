package labctl

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/daemon"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
)

// refresh brings a healthy lab in line with the code and manifests of this checkout without
// rebuilding it: a changed lab binary replaces the daemon (it holds no state the API and the
// kernel do not have), changed base manifests are applied again.
func refresh(ctx context.Context, l layout.Layout, o Options, say func(string, ...any)) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	same, err := sameFile(self, l.LabBinary())
	if err != nil {
		return err
	}
	if !same {
		mgr := Procs(l)
		if err := mgr.Stop(ctx, daemon.ProcName, l.StateDir); err != nil {
			return err
		}
		if err := copyFile(self, l.LabBinary(), 0o755); err != nil {
			return err
		}
		if _, _, err := mgr.Start(daemon.Spec(l)); err != nil {
			return err
		}
		if err := restartKubeletShims(ctx, l, mgr); err != nil {
			return err
		}
		say("lab binary changed: daemon and kubelet shims restarted")
	}
	st, err := LoadState(l)
	if err != nil {
		return err
	}
	dir := filepath.Join(o.LabDir, "manifests", "base")
	digest, err := dirDigest(dir)
	if err != nil {
		return err
	}
	if digest == st.ManifestsDigest {
		return nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", l.AdminKubeconfig())
	if err != nil {
		return err
	}
	cfg.WarningHandler = rest.NoWarnings{}
	a, err := NewApplier(cfg)
	if err != nil {
		return err
	}
	if err := applyTraefikCRDs(ctx, a, st.Binaries); err != nil {
		return err
	}
	if err := a.ApplyDir(ctx, dir); err != nil {
		return err
	}
	st.ManifestsDigest = digest
	say("base manifests changed: applied again")
	return SaveState(l, st)
}

func sameFile(a, b string) (bool, error) {
	x, err := os.ReadFile(a)
	if err != nil {
		return false, err
	}
	y, err := os.ReadFile(b)
	if err != nil {
		return false, nil
	}
	return bytes.Equal(x, y), nil
}

// dirDigest hashes the names and contents of the YAML files of dir.
func dirDigest(dir string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return "", err
	}
	sort.Strings(files)
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		_, _ = fmt.Fprintf(h, "%s\x00%d\x00", filepath.Base(f), len(b)) // a hash.Hash never returns a write error
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
